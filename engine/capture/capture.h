// Capture: everything one session of the tool produced, as a versioned JSON document (*.tvz.json).
// Contract: `save_capture` writes atomically (temporary file in the same folder, flush, fsync,
// rename): a crash or kill during a save leaves the previous file intact. `load_capture` checks
// the version and the structure; a bad document throws CaptureError with the JSON path of the
// problem ("/pipelines/0/stages/forward/2/text") and what was expected; a newer version is refused,
// an older one upgraded. Traces are stored as their printed text (all levels) and parsed when a
// stage's trace is first read (StageTrace), so a loaded capture holds real traces and opening one
// costs the JSON only; a stored text that does not parse throws CaptureError (its JSON path, line
// and column) where it is read, or from parse_stored_traces.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "record/record.h"

namespace tv {

class CaptureError : public std::runtime_error {
 public:
  CaptureError(std::string file, std::string json_path, std::string message);
  // A stored trace text that does not parse: also the 1-based line and column inside that text.
  CaptureError(std::string file, std::string json_path, std::string message, int trace_line, int trace_column);
  const std::string& json_path() const { return json_path_; }  // "" for the whole document
  const std::string& file() const { return file_; }
  const std::string& message() const { return message_; }     // without file and path
  int trace_line() const { return trace_line_; }              // 0 unless a stored trace failed to parse
  int trace_column() const { return trace_column_; }

 private:
  std::string file_, json_path_, message_;
  int trace_line_ = 0, trace_column_ = 0;
};

void save_capture(const Capture&, const std::string& path);
Capture load_capture(const std::string& path);
// Parses every stored trace not yet read: the first that does not parse throws its CaptureError.
void parse_stored_traces(const Capture&);
// The same from and to a string (used by the Python package and tests).
std::string capture_to_json(const Capture&);
Capture capture_from_json(std::string text, const std::string& source_name = "<string>");

}  // namespace tv
