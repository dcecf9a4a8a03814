// Import a folder of Thunder printouts as a capture (the layout of tests/fixtures/thunder).
// Contract: files named `<case>__<kind>__<index>.txt` (kind prologue, fwd, bwd, epilogue) become
// one pipeline per case, stages in index order, pass names from the "# Constructed by" line.
// `.python.txt` files (top level only) are skipped. A file that does not parse gives the
// pipeline an error naming FILE:LINE:COL; an empty or missing folder throws std::runtime_error.
#pragma once
#include <string>

#include "capture/capture.h"

namespace tv::gui {

Capture import_thunder_dir(const std::string& folder);

}  // namespace tv::gui
