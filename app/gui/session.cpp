#include "gui/session.h"

#include <algorithm>
#include <filesystem>

#include "gui/import_dir.h"
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
