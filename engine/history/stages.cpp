#include "history/stages.h"

#include "canonical/canonical.h"

namespace tv {

std::string_view trace_kind_name(TraceKind k) {
  switch (k) {
    case TraceKind::prologue: return "prologue";
    case TraceKind::forward: return "forward";
    case TraceKind::backward: return "backward";
    case TraceKind::epilogue: return "epilogue";
  }
  return "forward";
}

bool parse_trace_kind(std::string_view s, TraceKind* out) {
  for (auto k : kTraceKinds)
    if (trace_kind_name(k) == s) {
      *out = k;
      return true;
    }
  if (s == "computation" || s == "fwd") {
    *out = TraceKind::forward;
    return true;
  }
  if (s == "bwd") {
    *out = TraceKind::backward;
    return true;
  }
  return false;
}

StageTrace::StageTrace(TracePtr made) : made_(std::move(made)) {}

StoredLines StoredLines::of_text(std::string_view text) {
  auto table = std::make_shared<std::vector<std::string>>();
  for_each_line_of(text, [&](std::string_view line) { table->emplace_back(line); });
  StoredLines out;
  out.runs.push_back({0, static_cast<uint32_t>(table->size())});
  out.table = std::move(table);
  return out;
}

std::string StoredLines::text() const {
  size_t size = 0;
  for_each_line([&](std::string_view line) { size += line.size() + 1; });
  std::string out;
  out.reserve(size);
  for_each_line([&](std::string_view line) { out.append(line).push_back('\n'); });
  if (!out.empty()) out.pop_back();  // no '\n' after the last line
  return out;
}

StageTrace StageTrace::stored(StoredLines lines, Parse parse) {
  StageTrace t;
  t.stored_ = std::make_shared<Stored>();
  t.stored_->lines = std::move(lines);
  t.stored_->parse = std::move(parse);
  return t;
}

const TracePtr& StageTrace::shared() const {
  if (!stored_) return made_;
  Stored& s = *stored_;
  // call_once leaves the flag unset when the parse throws: the next read throws again.
  std::call_once(s.once, [&s] { s.trace = s.parse(s.lines.text()); });
  return s.trace;
}

const StoredLines* StageTrace::stored_lines() const { return stored_ ? &stored_->lines : nullptr; }

std::vector<Stage>& StageHistory::of(TraceKind k) {
  switch (k) {
    case TraceKind::prologue: return prologue;
    case TraceKind::forward: return forward;
    case TraceKind::backward: return backward;
    case TraceKind::epilogue: return epilogue;
  }
  return forward;
}

const std::vector<Stage>& StageHistory::of(TraceKind k) const { return const_cast<StageHistory*>(this)->of(k); }

void StageHistory::record(TraceKind k, std::string pass, TracePtr trace, double milliseconds) {
  auto start = std::chrono::steady_clock::now();
  auto& list = of(k);
  auto& last = canonical_of_last_[static_cast<size_t>(k)];
  CanonicalOfLast next{trace.get(), std::nullopt};
  bool changed = true;
  if (!list.empty()) {
    const Trace* previous = list.back().trace.get();
    if (last.trace != previous) last = {previous, std::nullopt};
    // Another shape: another program. The same objects: the same program. Else a walk side by
    // side tells where it can (canonical/canonical.h), and the texts where it cannot.
    if (previous && trace && same_shape(*previous, *trace)) {
      const NameMatch match = same_objects(*previous, *trace) ? NameMatch::renamed : match_up_to_names(*previous, *trace);
      if (match != NameMatch::unknown) {
        changed = match == NameMatch::different;
      } else {
        if (!last.text) last.text = canonical_text(*previous);
        next.text = canonical_text(*trace);
        changed = *last.text != *next.text;
      }
    }
  }
  last = std::move(next);
  list.push_back({std::move(pass), StageTrace(std::move(trace)), milliseconds + milliseconds_since(start), changed});
}

TracePtr StageHistory::record_timed(TraceKind k, std::string pass, const std::function<TracePtr()>& make) {
  auto start = std::chrono::steady_clock::now();
  TracePtr trace = make();
  record(k, std::move(pass), trace, milliseconds_since(start));
  return trace;
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

TracePtr StageHistory::last(TraceKind k) const {
  const auto& list = of(k);
  return list.empty() ? nullptr : list.back().trace.shared();
}

std::vector<StageComparison> compare_stages(const StageHistory& left, const StageHistory& right) {
  std::vector<StageComparison> out;
  for (auto kind : kTraceKinds) {
    const auto& la = left.of(kind);
    const auto& lb = right.of(kind);
    for (size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
      StageComparison s;
      s.kind = std::string(trace_kind_name(kind));
      s.stage = static_cast<int>(i);
      if (i < la.size()) s.left_pass = la[i].pass;
      if (i < lb.size()) s.right_pass = lb[i].pass;
      s.equal = i < la.size() && i < lb.size() && canonically_equal(*la[i].trace, *lb[i].trace);
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace tv
