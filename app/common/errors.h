// What every door of the executable shares about failure: the exit codes and bad input.
// Contract: 0 success or equivalent, 1 a difference or a failed check, 2 bad input. BadInput's
// text says what was wrong, where, and how to fix it; nothing already saved is touched.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>

namespace tv::app {

enum ExitCode { kOk = 0, kDifference = 1, kBadInput = 2 };

// A subcommand's code, set on the CLI11 app when the subcommand is chosen; returns the exit code.
using Runner = std::function<int()>;

// Bad input from the user (a file, a flag value, a model name, a script): exit code 2.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error message as the terminal may show it: without LibTorch's backtrace, and with control
// bytes of the input (ESC sequences, ...) escaped as \xNN instead of sent to the terminal.
std::string printable_error(const std::string& what);
// Writes "error: <printable_error(what)>" to stderr; returns `code` (the exit code).
int report_error(const std::string& what, int code);

}  // namespace tv::app
