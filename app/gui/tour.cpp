#include "gui/tour.h"

#include <imgui.h>

#include <algorithm>

#include "gui/app.h"
#include "gui/theme.h"

namespace tv::gui {
namespace {

struct Step {
  const char* title;
  const char* text;
  const char* button;
  void (*act)(App&);
};

void last_stage_of_p1(App& app) {
  Session& s = app.session;
  int p = s.capture && s.capture->pipelines.size() > 1 ? 1 : 0;
  const auto* rec = s.pipeline(p);
  if (!rec) return;
  TraceKind kind = rec->stages.backward.empty() ? TraceKind::forward : TraceKind::backward;
  s.select_stage({p, kind, std::max(0, static_cast<int>(rec->stages.of(kind).size()) - 1)});
  s.select_panel(Panel::trace);
}

const Step kSteps[] = {
    {"1. The problem",
     "In Thunder, ddp(jit(model)) and jit(ddp(model)) were not the same: jit() read the module's "
     "process_group_for_ddp when it was called, so DDP applied after jit left the backward all-reduce "
     "without a process group and failed with 'None had an unexpected type'.",
     "Open the order editor on jit, ddp",
     [](App& a) {
       a.order.set_order({"jit", "ddp"});
       a.order.world_size = std::max(a.order.world_size, 2);
       a.session.select_panel(Panel::order);
     }},
    {"2. Run both orders",
     "The engine applies transforms lazily at the first call, so both orders should give the same program. "
     "Run jit, ddp and ddp, jit on the same weights and inputs.",
     "Reverse to ddp, jit and Run",
     [](App& a) {
       a.order.previous = a.order.spec();
       a.order.set_order({"ddp", "jit"});
       a.order.run(a.session);
       a.session.select_panel(Panel::order);
     }},
    {"3. Read the traces",
     "Every pass leaves a stage. The backward of a DDP pipeline divides the gradient by the world size and "
     "all-reduces it. Hover a proxy for its type; click it to see where it is defined and used.",
     "Show the second pipeline's last backward stage", last_stage_of_p1},
    {"4. Compare the two orders",
     "The diff aligns bound symbols on rename-blind keys: '=' means same statement with other names, '~' changed, "
     "'+' added, '-' removed. 'same program' is canonical equality.",
     "Diff the two pipelines", [](App& a) { open_pipelines_in_diff(a.session, 0, 1); }},
    {"5. The rule",
     "In Thunder's semantics of 2024-03 jit() snapshots the module state and DDP's backward bucketing reads the "
     "snapshot: after jit it finds None, and the all-reduce's meta check fails while the backward is built. FSDP "
     "reads the module at the call and works. The rules matrix shows every pair in every mode.",
     "Switch the order editor to thunder-2024-03",
     [](App& a) {
       a.order.semantics = "thunder-2024-03";
       a.session.select_panel(a.session.capture && a.session.capture->rules ? Panel::rules : Panel::order);
     }},
};

}  // namespace

void Tour::draw(App& app) {
  if (!open) return;
  const int n = static_cast<int>(std::size(kSteps));
  step = std::clamp(step, 0, n - 1);
  ImGui::SetNextWindowSize(ImVec2(460, 260), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(ImGui::GetMainViewport()->WorkSize.x - 480, 60), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Guided tour: jit and ddp in either order", &open)) {
    ImGui::End();
    return;
  }
  const Step& s = kSteps[step];
  ImGui::TextUnformatted(s.title);
  ImGui::Separator();
  ImGui::TextWrapped("%s", s.text);
  ImGui::Spacing();
  if (ImGui::Button(s.button)) s.act(app);
  ImGui::Separator();
  if (step > 0 && ImGui::Button("< back")) --step;
  ImGui::SameLine();
  ImGui::TextColored(theme().muted, "step %d of %d", step + 1, n);
  ImGui::SameLine();
  if (step < n - 1 && ImGui::Button("next >")) ++step;
  ImGui::End();
}

}  // namespace tv::gui
