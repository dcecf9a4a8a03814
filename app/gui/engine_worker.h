// The engine worker: runs one engine job (load a capture, run pipelines) off the UI thread.
// Contract: `start` launches a job on a std::thread (waiting for a previous one to end first);
// the UI polls `busy`, `progress` and `status` every frame and `take`s the result once. A job that
// throws leaves its message as the error; nothing escapes the thread. A thread that cannot start
// (thread or memory limit) is that job's error, said so. The destructor joins.
#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "capture/capture.h"
#include "session/run.h"

namespace tv::gui {

class EngineWorker {
 public:
  using Job = std::function<Capture(const ProgressFn&)>;

  ~EngineWorker();
  void start(std::string what, Job job);
  bool busy() const { return busy_.load(); }
  double progress() const { return progress_.load(); }
  std::string status() const;
  // Moves a finished job's result out: true when there was one (then exactly one of capture/error is set).
  bool take(std::optional<Capture>* capture, std::string* error);
  void join();

 private:
  void run(const std::string& what, const Job& job);  // on the worker thread
  void finish(std::optional<Capture> result, std::string error);

  std::thread thread_;
  std::atomic<bool> busy_{false};
  std::atomic<double> progress_{0};
  mutable std::mutex mutex_;
  std::string status_;
  bool done_ = false;
  std::optional<Capture> result_;
  std::string error_;
};

}  // namespace tv::gui
