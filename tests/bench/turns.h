// Two benchmark processes taking turns, so that each repeat of one is timed right next to a repeat
// of the other, never at the same time: a host-bound step's speed drifts over seconds on the GPU
// machines, and a ratio of repeats measured in the same few seconds drifts far less than a ratio
// of whole processes. run_gpu_benchmarks.sh pairs tv_bench_step with bench_torch.py this way
// (bench_torch.py --turns speaks the same protocol).
// Contract: `--turns IN:OUT:first|second`, IN and OUT two FIFOs (mkfifo), crossed between the two
// processes, both with the same number of repeats. The second posts one token when it is warm; then
// each side waits for a token before each repeat and posts one after it; the first waits once more
// at the end, for the second's last repeat. So: second ready, first 1, second 1, first 2, ...,
// second N. A side that gets no token for 10 minutes throws.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tv::bench {

class Turns {
 public:
  Turns() = default;
  // "IN:OUT:first" or "IN:OUT:second"; empty: no turns (every call does nothing).
  explicit Turns(const std::string& spec) {
    if (spec.empty()) return;
    auto a = spec.find(':'), b = spec.rfind(':');
    std::string role = b == std::string::npos ? "" : spec.substr(b + 1);
    if (a == b || (role != "first" && role != "second"))
      throw std::invalid_argument("--turns " + spec + ": give IN:OUT:first or IN:OUT:second (two FIFOs)");
    first_ = role == "first";
    // Read-write opens do not block on a FIFO whose other end is not open yet.
    in_ = open_fifo(spec.substr(0, a));
    out_ = open_fifo(spec.substr(a + 1, b - a - 1));
  }
  Turns(const Turns&) = delete;
  Turns& operator=(const Turns&) = delete;
  ~Turns() {
    if (in_ >= 0) ::close(in_);
    if (out_ >= 0) ::close(out_);
  }

  bool on() const { return in_ >= 0; }
  void ready() {
    if (on() && !first_) post();
  }
  void before_repeat() {
    if (on()) wait();
  }
  void after_repeat() {
    if (on()) post();
  }
  void done() {
    if (on() && first_) wait();
  }

 private:
  static int open_fifo(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDWR);
    if (fd < 0) throw std::invalid_argument("--turns: cannot open " + path + ": " + std::strerror(errno));
    return fd;
  }
  void post() {
    char token = 't';
    if (::write(out_, &token, 1) != 1)
      throw std::runtime_error(std::string("--turns: cannot post: ") + std::strerror(errno));
  }
  void wait() {
    pollfd p{in_, POLLIN, 0};
    int ready = ::poll(&p, 1, 600 * 1000);
    char token;
    if (ready != 1 || ::read(in_, &token, 1) != 1)
      throw std::runtime_error("--turns: the other process posted no turn in 10 minutes (did it fail?)");
  }

  int in_ = -1, out_ = -1;
  bool first_ = true;
};

}  // namespace tv::bench
