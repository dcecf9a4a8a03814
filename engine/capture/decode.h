// Decoding of a capture document, checked field by field (see json_cursor.h for the errors).
// Contract: reads the current version and every older one back to kOldestCaptureVersion,
// upgrading in memory (version 0 kept the stages as one flat list with a "kind" member and had no
// "structure"); a newer version is refused before anything else is read. Stored trace texts are
// parsed with parse_trace; a parse error names the text's JSON path and its line:column. The stored
// texts are moved out of the document, which the decoder takes.
#pragma once
#include <string>

#include "capture/capture.h"
#include "capture/json_cursor.h"

namespace tv::capture_detail {

Capture decode_capture(Json document, const std::string& file);

}  // namespace tv::capture_detail
