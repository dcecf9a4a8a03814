// Encoding of each part of a Capture as JSON (the current version's layout, see
// docs/capture-format.md). Non-finite numbers are written as the strings "NaN", "Infinity" and
// "-Infinity", since JSON has no such numbers.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "capture/capture.h"

namespace tv::capture_detail {

using Json = nlohmann::ordered_json;

// The capture's line table (/lines): each distinct line of every stored trace once, in the order
// first met; a stage stores its text as runs of it ([first, count, first, count, ...]).
class LineTable {
 public:
  Json runs_of(std::string_view text);
  Json runs_of(const StoredLines& lines);
  Json lines() const;

 private:
  uint32_t id_of(std::string_view line);

  std::deque<std::string> lines_;  // a deque: the map's keys view these strings, which never move
  std::unordered_map<std::string_view, uint32_t> ids_;
};

Json encode_number(double);
Json encode_stage(const Stage&, LineTable&);
Json encode_stage_history(const StageHistory&, LineTable&);
Json encode_tensor_stats(const TensorStats&);
Json encode_replay(const Replay&);
Json encode_comparison(const Comparison&);
Json encode_rules(const RulesMatrix&);
Json encode_model(const ModelRecord&);
Json encode_pipeline(const PipelineRecord&, LineTable&);
Json encode_capture(const Capture&);

}  // namespace tv::capture_detail
