#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tv::cli {

ProgressBar::ProgressBar(std::string title) : title_(std::move(title)), enabled_(isatty(STDERR_FILENO) != 0) {}

ProgressBar::~ProgressBar() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

void ProgressBar::update(double fraction, const std::string& what) {
  if (!enabled_) return;
  constexpr int kWidth = 30;
  int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * kWidth);
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r\033[K%s [%s] %3d%% %s", title_.c_str(), bar.c_str(), static_cast<int>(fraction * 100),
               what.substr(0, 50).c_str());
  std::fflush(stderr);
}

}  // namespace tv::cli
