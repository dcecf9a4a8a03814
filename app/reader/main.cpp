// thunder-viz: the front door of the command line. What only reads a capture (`show FILE`) runs
// here, in a process without LibTorch: loading LibTorch and what it links takes about 0.4 s and
// 160 MB before main(), several times what reading a capture costs. Every other command, `--help`,
// and any invocation this door does not parse (its mistakes included, so their messages are the
// engine's) run in thunder-viz-engine, the program next to this one, which this process becomes
// (execv) with the same arguments, and with glibc's malloc backed by transparent huge pages.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>

#include "capture/capture.h"
#include "cli/show_capture.h"
#include "common/errors.h"

namespace {

namespace fs = std::filesystem;
using tv::app::BadInput;
using tv::app::kBadInput;
using tv::app::kDifference;

constexpr const char* kEngine = "thunder-viz-engine";

// Every stage of a pipeline is new memory, and so is every value of a capture's document; on a
// virtual machine a page fault per 4 KiB page is a large part of either: with huge pages (glibc's
// `glibc.malloc.hugetlb=1`, read when a process starts) a gpt of 32 layers builds its pipeline in
// about two thirds of the time and `show` reads its capture in about the same share
// (BENCHMARKS.md). A setting of the user's own is kept. Returns whether the setting was added.
bool prefer_huge_pages() {
  const char* given = std::getenv("GLIBC_TUNABLES");
  std::string tunables = given ? given : "";
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos) return false;
  tunables += tunables.empty() ? "glibc.malloc.hugetlb=1" : ":glibc.malloc.hugetlb=1";
  setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  return true;
}

// The reader itself, started again with huge pages; where that fails it reads with small pages.
void restart_with_huge_pages(char** argv) {
  if (!prefer_huge_pages()) return;
  execv("/proc/self/exe", argv);
}

[[noreturn]] void become_engine(char** argv) {
  prefer_huge_pages();
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  fs::path engine = (ec ? fs::path(argv[0]) : self).parent_path() / kEngine;
  execv(engine.c_str(), argv);
  std::cerr << "error: cannot start " << engine.string() << ": " << std::strerror(errno)
            << "; it is built with this program (ninja -C build thunder-viz-engine) and must sit next to it\n";
  std::exit(kDifference);
}

// `show FILE` with only the options the reader has; anything else is the engine's.
bool reads_a_capture_only(int argc, char** argv, tv::cli::ShowCaptureOptions& options) {
  if (argc < 3 || std::string(argv[1]) != "show") return false;
  CLI::App app;
  auto* show = app.add_subcommand("show");
  tv::cli::add_show_capture_options(*show, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Error&) {  // help, a mistake, an engine-only option (--model, --memory)
    return false;
  }
  return !options.file.empty();
}

}  // namespace

using tv::app::report_error;

int main(int argc, char** argv) {
  tv::cli::ShowCaptureOptions options;
  if (!reads_a_capture_only(argc, argv, options)) become_engine(argv);
  restart_with_huge_pages(argv);
  try {
    return tv::cli::show_capture(options);
  } catch (const BadInput& e) {
    return report_error(e.what(), kBadInput);
  } catch (const tv::CaptureError& e) {  // a stored trace read after the load (they are parsed when first read)
    return report_error(e.what(), kBadInput);
  } catch (const std::bad_alloc&) {
    return report_error("out of memory while reading the capture", kDifference);
  } catch (const std::exception& e) {
    return report_error(e.what(), kDifference);
  }
}
