// A progress bar on stderr for long work; silent when stderr is not a terminal.
#pragma once
#include <string>

namespace tv::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string title);
  ~ProgressBar();  // clears the line
  void update(double fraction, const std::string& what);

 private:
  std::string title_;
  bool enabled_;
};

}  // namespace tv::cli
