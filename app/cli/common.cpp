// Helpers shared by the commands.
#include "cli/command.h"
#include "pipeline/pipeline.h"

namespace tv::cli {

std::vector<std::string> split_order(const std::string& order) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= order.size()) {
    auto end = order.find(',', start);
    if (end == std::string::npos) end = order.size();
    auto name = order.substr(start, end - start);
    if (name.empty()) throw BadInput("--order '" + order + "': empty transform name; write e.g. --order jit,ddp");
    out.push_back(name);
    start = end + 1;
  }
  try {
    validate_order(out);  // unknown names and illegal orders are bad input, refused before any run
  } catch (const std::invalid_argument& e) {
    throw BadInput("--order " + order + ": " + e.what());
  }
  return out;
}

Capture run_pipelines_checked(const RunRequest& request) {
  try {
    return run_pipelines(request);
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
}

}  // namespace tv::cli
