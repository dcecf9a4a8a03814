// Session: what every panel of the window shares — the capture on screen, the selection, the
// panel in front, the last error, and the engine worker that loads and runs in the background.
// Contract: panels read the capture and call the methods below (the scripted driver calls the
// same methods), so a click and a script action take one code path. The capture is replaced
// only between frames, when the worker hands over a result.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/capture.h"
#include "gui/engine_worker.h"
#include "gui/ui_targets.h"
#include "ir/source_location.h"
#include "passes/memory.h"
#include "record/rank_table.h"
#include "session/rerun.h"
#include "session/run.h"

namespace tv::gui {

enum class Panel { stages, trace, diff, order, replay, rules };
inline constexpr Panel kPanels[] = {Panel::stages, Panel::trace, Panel::diff,
                                    Panel::order,  Panel::replay, Panel::rules};
const char* panel_name(Panel);                 // "stages", "trace", ...
bool parse_panel(const std::string&, Panel*);

// Whether the engine has a transform of that name (transform_names(), jit included).
bool is_known_transform(const std::string&);

struct StageRef {
  int pipeline = 0;
  TraceKind kind = TraceKind::forward;
  int stage = 0;
  bool operator==(const StageRef&) const = default;
};

// What the diff panel compares: two stages (of one pipeline, or of two pipelines).
struct DiffSelection {
  bool across_pipelines = false;  // false: two stages of one pipeline; true: same stage of two pipelines
  StageRef left, right;
  bool unified = false;
  // Selecting a stage diffs it against the stage before it (two stages of one pipeline).
  bool follow_selection = true;
  bool fold_unchanged = true;  // runs of unchanged statements folded to a few lines of context
  // Every pipeline side by side: one column each, aligned with the base pipeline's statements, at
  // the stage of `pass` in each ("": each pipeline's final stage) of `kind`.
  bool all_pipelines = false;
  int base = 0;
  TraceKind kind = TraceKind::forward;
  std::string pass;
};

// Forward <-> backward (transforms/gradient_links.h): the forward statement whose gradient is
// followed, as the pipeline's last forward and backward stages say it.
struct GradientFocus {
  int pipeline = 0;
  std::string key;                       // the forward statement's first output
  std::vector<std::string> keys;         // every key followed: `key`, or a fusion region's members'
  int fused = 0;                         // > 0: the forward statements of a fusion region of that many members
  std::string forward_statement;         // as printed, "" when the last forward has no such statement
  int backward_statements = 0;           // made by its rule, in the last backward stage
  std::vector<std::string> saved;        // the saved-for-backward values those read
};

// Source provenance (transforms/source_provenance.h): the source line followed, set by a click on a
// statement (its line) or on a line of the source pane; every statement from it is marked, at every
// stage.
struct SourceFocus {
  SourceLine line;  // file, line number, the code as the trace recorded it
};

// How the session's model runs again: its live request, the capture's built-in model, or the model
// rebuilt from the capture's acquired traces (jit/captured.h: random weights, replay off); or why
// it cannot.
struct Rerun {
  std::optional<RunRequest> request;
  std::string note;     // what a re-run gives, shown beside Run
  std::string why_not;  // when there is no request
};

struct Session {
  std::shared_ptr<const Capture> capture;  // null until the first load or run has finished
  std::string source;                      // what is shown: a file path or "model linear"
  std::string error;                       // the last failure, shown in the window
  std::optional<RunRequest> request;       // how to re-run live (absent for an imported capture)
  StageRef selected;
  DiffSelection diff;
  Panel panel = Panel::trace;
  bool panel_requested = true;             // select `panel` in the tab bar next frame (first frame too)
  int jump_to_statement = -1;              // trace view: scroll to this top-level bound symbol next frame
  std::optional<GradientFocus> gradient;   // the forward statement followed, if any
  std::string gradient_note;               // why the last click on a statement followed nothing
  bool scroll_to_gradient = false;         // trace view: scroll to the first linked line next frame
  std::optional<SourceFocus> source_focus;  // the source line followed, if any
  std::string source_note;                 // why the last click on a statement showed no source line
  bool scroll_to_source = false;           // trace view and source pane: scroll to the line next frame
  std::optional<RulesMatrix> carry_rules;  // given to the next capture when it has none
  UiTargets targets;                       // where named widgets were drawn (scripted mouse)
  EngineWorker worker;

  // Actions (UI and script).
  void load_file(const std::string& path);
  void run(RunRequest request, std::string what);
  void select_panel(Panel p);
  void select_stage(StageRef ref);
  // Follows the forward statement `key` of `pipeline` (a click on a forward statement).
  void follow_gradient(int pipeline, const std::string& key);
  // Follows several forward statements at once (the members of a fusion region).
  void follow_gradients(int pipeline, const std::vector<std::string>& keys, int fused = 0);
  // A click on a statement of the shown trace: a forward one is followed; a backward one follows the
  // forward statement it came from and shows it. Says in gradient_note when there is no link.
  void click_statement(const BoundSymbol& statement);
  // Shows the last stage of `kind` (forward or backward) of the followed pipeline holding the link.
  void show_gradient_side(TraceKind kind);
  // Follows a source line: marks the statements that came from it in every stage.
  void follow_source(const SourceLine& line);
  void stop_following_source();
  // Shows the next (+1) or previous (-1) stage of the selected pipeline holding a statement from
  // the followed line, in browser order (prologue, forward, backward).
  void step_source_stage(int direction);
  // Called once per frame: takes a finished job's result.
  void poll();

  // Queries.
  const PipelineRecord* pipeline(int index) const;
  const Stage* stage(const StageRef&) const;
  // The stage's trace, parsed when first read; null when there is none or when its stored text does
  // not parse, and then `unreadable` says why (the capture error: JSON path, line and column).
  TracePtr trace(const StageRef&) const;
  std::string unreadable(const StageRef&) const;
  // What a run of the stage's trace holds at most (passes/memory.h), computed once per trace.
  const passes::TraceMemory* memory(const StageRef&) const;
  // The forward trace a backward stage's statements take their source lines from: the pipeline's
  // last forward stage that holds forward <-> backward links; null when none does.
  TracePtr links_forward(int pipeline) const;
  // The statements of the stage (walk order, any level) from the followed source line; computed
  // once per (trace, line).
  const std::vector<const BoundSymbol*>& from_source(const StageRef&) const;
  // Computed once per capture (a rebuilt model is traced once to check it).
  const Rerun& rerun() const;
  // Every rank's statistics of the pipeline's values side by side (record/rank_table.h); null when
  // the pipeline was not replayed. Computed once per pipeline.
  const RankTable* rank_table(int pipeline) const;
  // Where the session's capture came from, for finding source files beside it: the folder of the
  // capture file or the imported folder itself; "" for a live run.
  std::string source_folder() const;
 private:
  void adopt(Capture capture);
  mutable std::map<const Trace*, passes::TraceMemory> memory_;  // of the capture's traces
  mutable std::map<const Stage*, std::string> unreadable_;      // stored texts that did not parse
  mutable std::map<const Trace*, std::vector<const BoundSymbol*>> from_source_;  // for source_focus
  mutable std::map<int, TracePtr> links_forward_;
  mutable std::optional<Rerun> rerun_;  // of the capture on screen
  mutable std::map<int, RankTable> rank_tables_;
};

// The pipeline's own outcome: "passed", "failed" or "refused" (record/verdict.h); "none" for no pipeline.
std::string pipeline_outcome(const Capture&, int pipeline);
// The first stage of the first non-empty kind (forward preferred) of a pipeline.
StageRef first_stage(const Capture&, int pipeline);

}  // namespace tv::gui
