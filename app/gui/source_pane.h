// Source pane: the file the followed source line (Session::source_focus) is in, around that line,
// beside the trace. A click on a line follows that line instead.
// Contract: the file is looked for where the trace says it is, then beside the capture (its folder,
// by file name), then under the source tree this program was built from (the zoo's model
// definitions); each file is read once, and only a regular file of at most 16 MB (a capture may
// name anything). Lines that produced a statement of the shown stage get a dot. When the file
// cannot be found, or its line no longer reads as the trace recorded it, the pane says so and
// shows the recorded line: it never shows another line as the source.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gui/session.h"

namespace tv::gui {

struct SourceFile {
  std::string path;                 // where it was read; "" when not found
  std::vector<std::string> lines;   // tabs expanded
  std::vector<std::string> tried;   // where it was looked for
};

// The file `file` (as a source location names it), looked for as the contract says; cached.
const SourceFile& find_source_file(const std::string& file, const std::string& capture_folder);

struct SourcePane {
  // What the last frame showed (the state dump reads it).
  std::string shown_file;          // the followed line's file, as recorded
  std::string read_from;           // where it was read; "" when not found
  bool code_matches = true;        // the file's line reads as the trace recorded it
  std::vector<int> statement_lines;  // lines of the file with a statement of the shown stage, ascending

  void draw(Session& s, float width);

 private:
  void update_statement_lines(const Session& s, const Trace* shown);
  std::string scrolled_for_;       // the focus the view last scrolled to ("file:line")
  const Trace* lines_of_ = nullptr;  // what statement_lines were computed for
  std::string lines_file_;
};

}  // namespace tv::gui
