#include "cli/batch_results.h"

#include <fmt/format.h>

#include "cli/markup.h"

namespace tv::cli {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

bool BatchCase::ok() const {
  for (const auto& v : verdicts)
    if (!v.ok) return false;
  return true;
}

std::string summary_text(const std::vector<BatchCase>& cases) {
  std::string out;
  size_t pipelines = 0, bad = 0, width = 8;
  for (const auto& c : cases)
    for (const auto& o : c.orders) width = std::max(width, o.size());
  for (const auto& c : cases)
    for (size_t i = 0; i < c.orders.size(); ++i) {
      const auto& v = c.verdicts[i];
      out += fmt::format("{:<24} {:<{}} {}", c.id, c.orders[i], width + 1, v.line);
      // The line already says the first reason's first line: the rest only.
      std::vector<std::string> more = v.reasons;
      if (!more.empty() && v.line.find(first_line(more.front())) != std::string::npos) {
        auto rest = more.front().find('\n');
        if (rest == std::string::npos) more.erase(more.begin());
        else more.front() = more.front().substr(rest + 1);
      }
      for (size_t r = 0; r < more.size(); ++r) out += (r ? "; " : ": ") + more[r];
      out += "\n";
      ++pipelines;
      bad += !v.ok;
    }
  out += fmt::format("{} case(s), {} pipeline(s): {} ok, {} not ok\n", cases.size(), pipelines, pipelines - bad, bad);
  return out;
}

std::string junit_xml(const std::vector<BatchCase>& cases, const std::string& suite_name) {
  size_t tests = 0, failures = 0;
  double seconds = 0;
  std::string body;
  for (const auto& c : cases) {
    size_t case_failures = 0;
    std::string testcases;
    for (size_t i = 0; i < c.orders.size(); ++i) {
      const auto& v = c.verdicts[i];
      testcases += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"",
                               escape_markup("thunder-viz." + c.id), escape_markup(c.orders[i]),
                               c.seconds / std::max<size_t>(1, c.orders.size()));
      if (v.ok) {
        testcases += "/>\n";
        continue;
      }
      ++case_failures;
      std::string reasons;
      for (const auto& r : v.reasons) reasons += r + "\n";
      testcases += fmt::format(">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                               escape_markup(v.outcome), escape_markup(v.line), escape_markup(reasons));
    }
    body += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{:.3f}\">\n{}  </testsuite>\n",
                        escape_markup(c.id), c.orders.size(), case_failures, c.seconds, testcases);
    tests += c.orders.size();
    failures += case_failures;
    seconds += c.seconds;
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{:.3f}\">\n{}</testsuites>\n",
                     escape_markup(suite_name), tests, failures, seconds, body);
}

}  // namespace tv::cli
