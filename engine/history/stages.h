// Stage history: every trace a call produced, per kind, with the pass that made it.
// Contract: the lists are what thunder.last_prologue_traces / last_traces /
// last_backward_traces give in Thunder (plus the epilogue): stage 0 is the acquired trace, each
// later stage is the output of one named pass; a pass that failed leaves its partial trace as the
// last stage, marked failed. `changed` says whether a stage differs from the
// one before it as a program (canonical equality), so a viewer can hide passes that did nothing.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/trace.h"

namespace tv {

enum class TraceKind { prologue, forward, backward, epilogue };
inline constexpr TraceKind kTraceKinds[] = {TraceKind::prologue, TraceKind::forward, TraceKind::backward,
                                             TraceKind::epilogue};

std::string_view trace_kind_name(TraceKind);            // "prologue", "forward", "backward", "epilogue"
bool parse_trace_kind(std::string_view, TraceKind* out);  // also accepts "computation" for forward

// A stored trace's text as a capture keeps it: runs of lines of a table the whole capture shares,
// each distinct line once, joined with '\n' (a deep model's stages repeat most of their lines).
struct StoredLines {
  struct Run {
    uint32_t first = 0, count = 0;  // lines [first, first + count) of the table
  };
  std::shared_ptr<const std::vector<std::string>> table;
  std::vector<Run> runs;

  // A table of the text's own lines, in one run (a text stored whole, as older captures did).
  static StoredLines of_text(std::string_view text);
  std::string text() const;  // the lines joined with '\n'
  template <class Fn>
  void for_each_line(Fn&& fn) const {
    for (const Run& r : runs)
      for (uint32_t i = r.first; i < r.first + r.count; ++i) fn(std::string_view((*table)[i]));
  }
  // Each line of `text`, split at '\n' (a text that ends in '\n' ends with an empty line).
  template <class Fn>
  static void for_each_line_of(std::string_view text, Fn&& fn) {
    for (size_t start = 0;;) {
      const size_t end = text.find('\n', start);
      fn(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
      if (end == std::string_view::npos) return;
      start = end + 1;
    }
  }
};

// A stage's trace: the one a pass made, or the printed text a capture stored, parsed the first time
// it is asked for (a capture of a deep model holds hundreds of traces and a viewer shows a few).
// Copies share the parse. Reading a stored text that does not parse throws what `parse` throws,
// at every read. Safe to read from several threads.
class StageTrace {
 public:
  using Parse = std::function<TracePtr(const std::string& text)>;

  StageTrace() = default;
  StageTrace(TracePtr made);  // NOLINT(google-explicit-constructor): a pass's trace is a stage's trace
  StageTrace(std::nullptr_t) {}
  static StageTrace stored(StoredLines lines, Parse parse);

  const TracePtr& shared() const;  // parses a stored text on first use
  const Trace* get() const { return shared().get(); }
  const Trace& operator*() const { return *shared(); }
  const Trace* operator->() const { return shared().get(); }
  explicit operator bool() const { return made_ || stored_; }
  bool operator==(std::nullptr_t) const { return !*this; }

  // The lines this trace was stored as (a save writes them back as they are); null for a made trace.
  const StoredLines* stored_lines() const;

 private:
  struct Stored {
    StoredLines lines;
    Parse parse;
    std::once_flag once;
    TracePtr trace;
  };
  TracePtr made_;
  std::shared_ptr<Stored> stored_;
};

struct Stage {
  std::string pass;          // "Dead Code Elimination"; the first stage is "acquisition"
  StageTrace trace;
  double milliseconds = 0;   // time the pass took, its comparison with the previous stage included
  bool changed = true;       // differs from the previous stage (always true for stage 0)
  // The pass stopped here: the trace is partial, up to and including the top-level bound symbol
  // at this index, the one that failed, then the return. -1 when the pass completed.
  int failed_at = -1;
  bool failed() const { return failed_at >= 0; }
};

struct StageHistory {
  std::vector<Stage> prologue, forward, backward, epilogue;

  std::vector<Stage>& of(TraceKind);
  const std::vector<Stage>& of(TraceKind) const;
  // Appends a stage, computing `changed` against the last stage of that kind.
  void record(TraceKind, std::string pass, TracePtr trace, double milliseconds);
  // Runs `make`, records its trace with the time it took, and returns the trace.
  TracePtr record_timed(TraceKind, std::string pass, const std::function<TracePtr()>& make);
  TracePtr last(TraceKind) const;  // null when there is none

 private:
  // The canonical text of each kind's last stage once a comparison needed it (the same shape as
  // the next stage's, other objects), so each trace is put in canonical form at most once. Keyed
  // by the trace, so a list changed directly is seen.
  struct CanonicalOfLast {
    const Trace* trace = nullptr;
    std::optional<std::string> text;
  };
  CanonicalOfLast canonical_of_last_[4];
};

// Milliseconds since `start`: a stage's time when one pass makes several traces (record_timed
// otherwise).
double milliseconds_since(std::chrono::steady_clock::time_point start);

// Stage by stage, by position, for every trace kind: whether two histories hold the same program.
struct StageComparison {
  std::string kind;        // trace kind
  int stage = 0;           // index in both lists (aligned by position of the final stages)
  std::string left_pass, right_pass;
  bool equal = false;      // canonically equal
};
std::vector<StageComparison> compare_stages(const StageHistory& left, const StageHistory& right);

}  // namespace tv
