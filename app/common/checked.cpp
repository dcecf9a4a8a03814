#include "common/checked.h"

#include <algorithm>

#include "transforms/order.h"

namespace tv::app {

std::vector<std::string> split_order(const std::string& order) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= order.size()) {
    auto end = order.find(',', start);
    if (end == std::string::npos) end = order.size();
    auto name = order.substr(start, end - start);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name.empty()) throw BadInput("--order '" + order + "': empty transform name; write e.g. --order jit,ddp");
    auto known = transform_names();
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw BadInput("--order " + order + ": unknown transform '" + name + "' (known: " + order_label(known) + ")");
    out.push_back(name);
    start = end + 1;
  }
  return out;
}

std::vector<std::string> parse_order(const std::string& order) {
  auto out = split_order(order);
  try {
    ValidatedOrder{out};
  } catch (const std::invalid_argument& e) {
    throw BadInput("--order " + order + ": " + e.what());
  }
  return out;
}

Capture run_pipelines_checked(const RunRequest& request, const ProgressFn& progress) {
  try {
    return run_pipelines(request, progress);
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
}

}  // namespace tv::app
