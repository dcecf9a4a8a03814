#include "gui/session.h"

#include <algorithm>
#include <filesystem>

#include "gui/import_dir.h"
#include "format/printer.h"
#include "transforms/gradient_links.h"
#include "transforms/source_provenance.h"
#include "transforms/transform.h"

namespace tv::gui {

const char* panel_name(Panel p) {
  switch (p) {
    case Panel::stages: return "stages";
    case Panel::trace: return "trace";
    case Panel::diff: return "diff";
    case Panel::order: return "order";
    case Panel::replay: return "replay";
    case Panel::rules: return "rules";
  }
  return "?";
}

bool parse_panel(const std::string& name, Panel* out) {
  for (Panel p : kPanels)
    if (name == panel_name(p)) {
      *out = p;
      return true;
    }
  return false;
}

bool is_known_transform(const std::string& name) {
  auto names = transform_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

void Session::load_file(const std::string& path) {
  source = path;
  request.reset();
  worker.start("loading " + path, [path](const ProgressFn& progress) {
    if (progress) progress(0.1, "reading " + path);
    if (std::filesystem::is_directory(path)) return import_thunder_dir(path);
    return load_capture(path);
  });
}

void Session::run(RunRequest r, std::string what) {
  request = r;
  source = "model " + r.model;
  worker.start(std::move(what), [r](const ProgressFn& progress) { return run_pipelines(r, progress); });
}

void Session::select_panel(Panel p) {
  panel = p;
  panel_requested = true;
}

void Session::select_stage(StageRef ref) {
  if (!stage(ref)) return;
  selected = ref;
  if (diff.follow_selection) {
    diff.across_pipelines = false;
    diff.right = ref;
    diff.left = ref;
    diff.left.stage = std::max(0, ref.stage - 1);
  }
}

void Session::follow_gradient(int pipeline_index, const std::string& key) {
  follow_gradients(pipeline_index, key.empty() ? std::vector<std::string>{} : std::vector<std::string>{key});
}

void Session::follow_gradients(int pipeline_index, const std::vector<std::string>& keys, int fused) {
  gradient_note.clear();
  const auto* p = pipeline(pipeline_index);
  if (!p || keys.empty()) return gradient.reset();
  GradientFocus f;
  f.pipeline = pipeline_index;
  f.key = keys.front();
  f.keys = keys;
  f.fused = fused;
  auto last = [&](TraceKind k) { return trace({pipeline_index, k, static_cast<int>(p->stages.of(k).size()) - 1}); };
  if (TracePtr forward = last(TraceKind::forward); forward && !fused)
    if (const BoundSymbol* b = forward_statement(*forward, f.key)) f.forward_statement = print_statement(*b);
  if (fused) f.forward_statement = "a fusion region of " + std::to_string(fused) + " statements";
  if (TracePtr backward = last(TraceKind::backward)) {
    std::vector<const BoundSymbol*> made;
    for (const auto& k : keys)
      for (const BoundSymbol* b : backward_statements(*backward, k)) made.push_back(b);
    f.backward_statements = static_cast<int>(made.size());
    f.saved = saved_values_read(*backward, made);
  }
  gradient = std::move(f);
}

void Session::click_statement(const BoundSymbol& b) {
  gradient_note.clear();
  source_note.clear();
  if (TracePtr shown = trace(selected)) {
    TracePtr forward = selected.kind == TraceKind::backward ? links_forward(selected.pipeline) : nullptr;
    SourceRef from = statement_source(*shown, b, forward.get());
    std::optional<SourceLine> line = from ? source_line(*from) : std::nullopt;
    if (line) {
      follow_source(*line);
      scroll_to_source = false;  // the clicked statement is on screen already
    } else
      source_note = from ? "its source comment names no file and line: \"" + *from + "\""
                         : "no source line for this statement: a pass added it (a collective, an unpack, a del), or "
                           "the printout has no source comment above it and no forward statement it came from";
  }
  if (selected.kind != TraceKind::forward && selected.kind != TraceKind::backward) return;
  if (!b.gradient_of.empty()) {
    follow_gradient(selected.pipeline, b.gradient_of);
    if (selected.kind == TraceKind::backward) show_gradient_side(TraceKind::forward);
    return;
  }
  std::vector<std::string> keys;  // a fusion region: its members carry the links
  int members = 0;
  walk(b.subsymbols, [&](const BoundSymbol& member, int depth) {
    if (depth == 0) ++members;
    if (!member.gradient_of.empty() && std::find(keys.begin(), keys.end(), member.gradient_of) == keys.end())
      keys.push_back(member.gradient_of);
  });
  TracePtr shown = trace(selected);
  if (!keys.empty()) {
    follow_gradients(selected.pipeline, keys, members);
    if (selected.kind == TraceKind::backward) show_gradient_side(TraceKind::forward);
  } else if (!shown || !has_gradient_links(*shown))
    gradient_note = "this trace carries no forward-backward links: only the traces of this engine's grad transform "
                    "and the passes after it have them (printouts imported from Thunder do not)";
  else if (selected.kind == TraceKind::forward)
    gradient_note = "autograd did not differentiate this statement: nothing that needs a gradient flows through it, "
                    "or it is a piece of the statement above it";
  else
    gradient_note = "no forward statement made this one: a pass added it (a collective, an unpack, a del)";
}

void Session::show_gradient_side(TraceKind kind) {
  if (!gradient) return;
  const auto* p = pipeline(gradient->pipeline);
  if (!p) return;
  for (int i = static_cast<int>(p->stages.of(kind).size()) - 1; i >= 0; --i) {
    StageRef ref{gradient->pipeline, kind, i};
    TracePtr t = trace(ref);
    if (!t) continue;
    bool holds = false;
    for (const auto& key : gradient->keys)
      holds = holds || (kind == TraceKind::forward ? forward_statement(*t, key) != nullptr
                                                   : !backward_statements(*t, key).empty());
    if (!holds) continue;
    select_stage(ref);
    select_panel(Panel::trace);
    scroll_to_gradient = true;
    return;
  }
  gradient_note = std::string("no ") + std::string(trace_kind_name(kind)) + " stage holds " + gradient->key;
}

void Session::follow_source(const SourceLine& line) {
  source_note.clear();
  source_focus = SourceFocus{line};
  from_source_.clear();
  scroll_to_source = true;
}

void Session::stop_following_source() {
  source_focus.reset();
  from_source_.clear();
}

void Session::step_source_stage(int direction) {
  const auto* p = pipeline(selected.pipeline);
  if (!source_focus || !p) return;
  std::vector<StageRef> order;
  for (TraceKind k : kTraceKinds)
    for (int i = 0; i < static_cast<int>(p->stages.of(k).size()); ++i) order.push_back({selected.pipeline, k, i});
  auto at = std::find(order.begin(), order.end(), selected);
  int i = at == order.end() ? -1 : static_cast<int>(at - order.begin());
  for (i += direction; i >= 0 && i < static_cast<int>(order.size()); i += direction)
    if (!from_source(order[i]).empty()) {
      select_stage(order[i]);
      select_panel(Panel::trace);
      scroll_to_source = true;
      return;
    }
  source_note = std::string("no ") + (direction > 0 ? "later" : "earlier") + " stage of P" +
                std::to_string(selected.pipeline) + " holds a statement from " + source_focus->line.file + ":" +
                std::to_string(source_focus->line.line);
}

void Session::poll() {
  std::optional<Capture> result;
  std::string failure;
  if (!worker.take(&result, &failure)) return;
  if (!failure.empty()) {
    error = failure;
    return;
  }
  if (result) {
    error.clear();
    adopt(std::move(*result));
  }
}

void Session::adopt(Capture c) {
  if (!c.rules && carry_rules) c.rules = std::move(carry_rules);
  carry_rules.reset();
  capture = std::make_shared<const Capture>(std::move(c));
  memory_.clear();
  unreadable_.clear();
  from_source_.clear();
  links_forward_.clear();
  rerun_.reset();
  rank_tables_.clear();
  gradient.reset();
  gradient_note.clear();
  source_focus.reset();
  source_note.clear();
  if (capture->pipelines.empty() && capture->rules) select_panel(Panel::rules);  // a rules-only capture
  if (!stage(selected)) selected = first_stage(*capture, 0);
  diff.left = selected;
  diff.right = selected;
  // Default diff: first against last stage of the selected kind, or across the first two pipelines.
  if (const auto* p = pipeline(selected.pipeline)) {
    int n = static_cast<int>(p->stages.of(selected.kind).size());
    diff.right.stage = std::max(0, n - 1);
  }
  if (capture->pipelines.size() > 1 && diff.right.stage == diff.left.stage) {
    diff.across_pipelines = true;
    diff.right = first_stage(*capture, 1);
  }
}

const PipelineRecord* Session::pipeline(int index) const {
  if (!capture || index < 0 || index >= static_cast<int>(capture->pipelines.size())) return nullptr;
  return &capture->pipelines[index];
}

const Stage* Session::stage(const StageRef& ref) const {
  const auto* p = pipeline(ref.pipeline);
  if (!p) return nullptr;
  const auto& list = p->stages.of(ref.kind);
  if (ref.stage < 0 || ref.stage >= static_cast<int>(list.size())) return nullptr;
  return &list[ref.stage];
}

TracePtr Session::trace(const StageRef& ref) const {
  const Stage* st = stage(ref);
  if (!st || !st->trace || unreadable_.count(st)) return nullptr;
  try {
    return st->trace.shared();
  } catch (const CaptureError& e) {  // parsed once: a damaged text is not parsed again every frame
    unreadable_[st] = e.what();
    return nullptr;
  }
}

std::string Session::unreadable(const StageRef& ref) const {
  auto it = unreadable_.find(stage(ref));
  return it == unreadable_.end() ? std::string() : it->second;
}

const passes::TraceMemory* Session::memory(const StageRef& ref) const {
  TracePtr t = trace(ref);
  if (!t) return nullptr;
  auto it = memory_.find(t.get());
  if (it == memory_.end()) it = memory_.emplace(t.get(), passes::trace_memory(*t)).first;
  return &it->second;
}

TracePtr Session::links_forward(int index) const {
  if (auto it = links_forward_.find(index); it != links_forward_.end()) return it->second;
  TracePtr found;
  if (const auto* p = pipeline(index))
    for (int i = static_cast<int>(p->stages.forward.size()) - 1; i >= 0 && !found; --i)
      if (TracePtr t = trace({index, TraceKind::forward, i}); t && has_gradient_links(*t)) found = t;
  links_forward_[index] = found;
  return found;
}

const std::vector<const BoundSymbol*>& Session::from_source(const StageRef& ref) const {
  static const std::vector<const BoundSymbol*> none;
  TracePtr t = source_focus ? trace(ref) : nullptr;
  if (!t) return none;
  auto it = from_source_.find(t.get());
  if (it == from_source_.end()) {
    TracePtr forward = ref.kind == TraceKind::backward ? links_forward(ref.pipeline) : nullptr;
    it = from_source_.emplace(t.get(), statements_from(*t, source_focus->line, forward.get())).first;
  }
  return it->second;
}

const RankTable* Session::rank_table(int index) const {
  if (auto it = rank_tables_.find(index); it != rank_tables_.end()) return &it->second;
  const auto* p = pipeline(index);
  if (!p || !p->replay || p->replay->ranks.empty()) return nullptr;
  return &rank_tables_.emplace(index, tv::rank_table(p->stages, *p->replay)).first->second;
}

const Rerun& Session::rerun() const {
  if (rerun_) return *rerun_;
  Rerun r;
  if (request) {
    r.request = request;
    if (request->model_factory)
      r.note = rerun_note(capture ? capture->model.name : "", request->reference.compute ? "stored" : "");
  } else if (!capture) {
    r.why_not = "nothing is open";
  } else {
    CaptureRerun again = rerun_of(*capture, source_folder());
    r.request = std::move(again.request);
    r.note = std::move(again.note);
    r.why_not = std::move(again.why_not);
  }
  rerun_ = std::move(r);
  return *rerun_;
}

std::string Session::source_folder() const {
  if (request || source.empty()) return "";
  std::filesystem::path p(source);
  std::error_code ec;
  return std::filesystem::is_directory(p, ec) ? p.string() : p.parent_path().string();
}

std::string pipeline_outcome(const Capture& c, int index) {
  if (index < 0 || index >= static_cast<int>(c.pipelines.size())) return "none";
  return std::string(outcome_name(c.pipelines[index].outcome.kind));
}

StageRef first_stage(const Capture& c, int pipeline) {
  StageRef ref{pipeline, TraceKind::forward, 0};
  if (pipeline < 0 || pipeline >= static_cast<int>(c.pipelines.size())) return ref;
  const auto& stages = c.pipelines[pipeline].stages;
  if (!stages.forward.empty()) return ref;
  for (TraceKind k : kTraceKinds)
    if (!stages.of(k).empty()) return {pipeline, k, 0};
  return ref;
}

}  // namespace tv::gui
