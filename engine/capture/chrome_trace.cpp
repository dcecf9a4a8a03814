#include "capture/chrome_trace.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "capture/atomic_file.h"

namespace tv {

std::string chrome_trace_json(const Capture& capture) {
  using Json = nlohmann::ordered_json;
  Json events = Json::array();
  for (size_t p = 0; p < capture.pipelines.size(); ++p) {
    const auto& pipeline = capture.pipelines[p];
    if (!pipeline.replay) continue;
    bool device = false;
    for (const auto& r : pipeline.replay->ranks)
      for (const auto& t : r.timings) device = device || t.device_timer;
    const int pid = static_cast<int>(p) + 1;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid},
                      {"args", {{"name", pipeline.spec.label() + " on " + pipeline.spec.device +
                                             (device ? " (CUDA events)" : " (host clock)")}}}});
    for (const auto& rank : pipeline.replay->ranks) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", rank.rank},
                        {"args", {{"name", "rank " + std::to_string(rank.rank)}}}});
      double trace_origin = 0, trace_end = 0, previous_end = 0;
      std::string current;
      for (const auto& t : rank.timings) {
        if (t.trace != current) {  // the next trace starts where the previous one ended
          current = t.trace;
          trace_origin = previous_end = trace_end;
        }
        double start = t.start_microseconds > 0 ? trace_origin + t.start_microseconds : previous_end;
        previous_end = start + t.microseconds;
        trace_end = std::max(trace_end, previous_end);
        events.push_back({{"name", t.symbol},
                          {"cat", t.trace},
                          {"ph", "X"},
                          {"pid", pid},
                          {"tid", rank.rank},
                          {"ts", start},
                          {"dur", t.microseconds},
                          {"args", {{"output", t.output}, {"index", t.index}, {"key", t.trace + ":" + std::to_string(t.index)}}}});
      }
    }
  }
  Json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"model", capture.model.name}, {"producer", "thunder-viz"}}}};
  return doc.dump(1) + "\n";
}

void save_chrome_trace(const Capture& capture, const std::string& path) {
  capture_detail::write_file_atomically(path, chrome_trace_json(capture));
}

}  // namespace tv
