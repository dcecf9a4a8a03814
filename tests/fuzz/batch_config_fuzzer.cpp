// libFuzzer harness: the batch configuration. Any file may be refused, with BadInput only (the
// command line's exit 2: no other exception, crash, leak or hang); one that is accepted names only
// known models, legal world sizes and devices.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "cli/batch_config.h"
#include "common/errors.h"
#include "fuzz_util.h"

namespace {

// load_batch_config reads a path: the input goes to one file of this process, rewritten per input.
const std::string& config_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/tv-batch-fuzz-" + std::to_string(getpid()) + ".json";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  FILE* f = std::fopen(config_path().c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  tv::cli::BatchConfig config;
  try {
    config = tv::cli::load_batch_config(config_path());
  } catch (const tv::app::BadInput&) {
    return 0;
  }
  if (config.models.empty() || config.orders.empty() || config.world_sizes.empty() || config.devices.empty())
    tv::fuzz::violation("an accepted config has something to run", input, "", "an empty list was accepted");
  for (int w : config.world_sizes)
    if (w < 1) tv::fuzz::violation("an accepted config has world sizes of at least 1", input, std::to_string(w), "");
  return 0;
}
