// A crash of the unit-test binary (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints its stack to
// stderr before the default action, so that a crash on a machine without a debugger (the GPU
// machine) still says where it happened. Frames in the test binary print as "tv_unit_tests(+0xOFFSET)";
// tests/gpu/run_gpu_tests.sh turns those into function names with addr2line.
#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <initializer_list>

namespace {

void print_stack_and_die(int signal_number) {
  static const char header[] = "\n*** tv_unit_tests crashed; stack (innermost first):\n";
  (void)!write(STDERR_FILENO, header, sizeof header - 1);
  void* frames[64];
  int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

const bool installed = [] {
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(s, print_stack_and_die);
  return true;
}();

}  // namespace
