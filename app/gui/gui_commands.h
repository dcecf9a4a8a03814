// The GUI doors of thunder-viz: `gui` (the window) and `screenshot` (one panel rendered into a PNG
// in a hidden window). app/main.cpp calls add_gui_commands next to the batch commands.
// Contract: bad flags, an unknown model or transform, or no display give exit code 2 before or
// instead of a window; a capture that fails to load or a run that fails is shown in the window
// (exit 0). `--script` drives the window with actions between real frames and `--dump-state`
// writes what the window holds as JSON on exit (for tests).
#pragma once
#include <CLI/CLI.hpp>

#include "common/errors.h"

namespace tv::gui {

void add_gui_commands(CLI::App& app, tv::app::Runner& run);

}  // namespace tv::gui
