// What the window holds, as JSON (for tests and bug reports): the order being edited, the
// capture's pipelines with their verdicts, the selection, the first lines of the trace view, its
// marked line and what the proxy tooltip under the mouse shows, the diff summary, the rules matrix
// as the last frame drew it, the replay panel's slowest bound symbols, and the errors.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tv::gui {

class App;

nlohmann::json dump_state(const App& app);
// Writes dump_state (plus the script log) to `path`; throws std::runtime_error when it cannot.
void write_state(const App& app, const std::string& path, const std::vector<std::string>& script_log);

}  // namespace tv::gui
