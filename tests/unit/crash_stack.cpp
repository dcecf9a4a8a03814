// A crash of the unit-test binary (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints its stack to
// stderr before the default action, so that a crash on a machine without a debugger (the GPU
// machine) still says where it happened. Frames in the test binary print as "tv_unit_tests(+0xOFFSET)";
// tests/gpu/run_gpu_tests.sh turns those into function names with addr2line. The faulting
// instruction and, on x86-64, the return address on top of the stack come first: a call through a
// null function pointer leaves no frame for backtrace() to walk, only that return address.
#include <execinfo.h>
#include <ucontext.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <initializer_list>

namespace {

// Async-signal-safe: no allocation, no stdio.
void write_text(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  (void)!write(STDERR_FILENO, s, n);
}

void write_hex(uintptr_t v) {
  char buf[2 + 2 * sizeof v + 1];
  buf[0] = '0';
  buf[1] = 'x';
  for (size_t i = 0; i < 2 * sizeof v; ++i) buf[2 + i] = "0123456789abcdef"[(v >> (4 * (2 * sizeof v - 1 - i))) & 0xf];
  buf[sizeof buf - 1] = '\0';
  write_text(buf);
}

void print_stack_and_die(int signal_number, siginfo_t* info, void* context) {
  write_text("\n*** tv_unit_tests crashed (signal ");
  char num[4] = {static_cast<char>('0' + signal_number / 10 % 10), static_cast<char>('0' + signal_number % 10), ')', '\0'};
  write_text(num);
  write_text(", fault address ");
  write_hex(reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr));
#if defined(__x86_64__) && defined(REG_RIP)
  if (context) {
    const auto* uc = static_cast<const ucontext_t*>(context);
    uintptr_t ip = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
    const auto* sp = reinterpret_cast<const uintptr_t*>(uc->uc_mcontext.gregs[REG_RSP]);
    write_text(", instruction ");
    write_hex(ip);
    if (sp) {
      write_text(", top of stack (a return address after a call to nowhere) ");
      write_hex(*sp);
      void* top = reinterpret_cast<void*>(*sp);
      write_text("\n");
      backtrace_symbols_fd(&top, 1, STDERR_FILENO);
    }
  }
#endif
  write_text("\nstack (innermost first):\n");
  void* frames[64];
  int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

const bool installed = [] {
  struct sigaction action {};
  action.sa_sigaction = print_stack_and_die;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(s, &action, nullptr);
  return true;
}();

}  // namespace
