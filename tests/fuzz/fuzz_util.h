// What every harness shares: how a broken law is reported. A violation prints what was fed, what
// came out and why, then aborts, so that libFuzzer keeps the input as a crash and minimises it.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace tv::fuzz {

[[noreturn]] inline void violation(const char* law, std::string_view input, std::string_view output,
                                   std::string_view why) {
  std::fprintf(stderr, "\n=== law broken: %s\n--- input (%zu bytes)\n%.*s\n--- output (%zu bytes)\n%.*s\n--- why\n%.*s\n",
               law, input.size(), static_cast<int>(std::min<size_t>(input.size(), 4000)), input.data(), output.size(),
               static_cast<int>(std::min<size_t>(output.size(), 4000)), output.data(), static_cast<int>(why.size()),
               why.data());
  std::abort();
}

}  // namespace tv::fuzz
