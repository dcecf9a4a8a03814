// Encoding of each part of a Capture as JSON (the current version's layout, see
// docs/capture-format.md). Non-finite numbers are written as the strings "NaN", "Infinity" and
// "-Infinity", since JSON has no such numbers.
#pragma once
#include <nlohmann/json.hpp>

#include "capture/capture.h"

namespace tv::capture_detail {

using Json = nlohmann::ordered_json;

Json encode_number(double);
Json encode_stage(const Stage&);
Json encode_stage_history(const StageHistory&);
Json encode_tensor_stats(const TensorStats&);
Json encode_replay(const Replay&);
Json encode_comparison(const Comparison&);
Json encode_rules(const RulesMatrix&);
Json encode_model(const ModelRecord&);
Json encode_pipeline(const PipelineRecord&);
Json encode_capture(const Capture&);

}  // namespace tv::capture_detail
