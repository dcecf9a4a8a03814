#include "gui/engine_worker.h"

#include <exception>
#include <new>
#include <system_error>

namespace tv::gui {

EngineWorker::~EngineWorker() { join(); }

void EngineWorker::join() {
  if (thread_.joinable()) thread_.join();
}

void EngineWorker::start(std::string what, Job job) {
  join();
  {
    std::lock_guard lock(mutex_);
    status_ = what;
    done_ = false;
    result_.reset();
    error_.clear();
  }
  progress_ = 0;
  busy_ = true;
  try {
    thread_ = std::thread([this, what, job = std::move(job)] { run(what, job); });
  } catch (const std::system_error& e) {
    // The thread or memory limit was reached: the job's error, not an abort of the window.
    finish(std::nullopt, what + ": could not start the engine's thread (" + e.what() +
                             "): the process reached its limit of threads (ulimit -u) or of memory");
  }
}

void EngineWorker::run(const std::string& what, const Job& job) {
  std::optional<Capture> result;
  std::string error;
  ProgressFn progress = [this](double fraction, const std::string& text) {
    progress_ = fraction;
    std::lock_guard lock(mutex_);
    status_ = text;
  };
  try {
    result = job(progress);
  } catch (const std::bad_alloc&) {
    error = what + ": out of memory";
  } catch (const std::exception& e) {
    error = what + ": " + e.what();
  } catch (...) {
    error = what + ": unknown error";
  }
  finish(std::move(result), std::move(error));
}

void EngineWorker::finish(std::optional<Capture> result, std::string error) {
  {
    std::lock_guard lock(mutex_);
    result_ = std::move(result);
    error_ = std::move(error);
    done_ = true;
  }
  progress_ = 1.0;
  busy_ = false;
}

std::string EngineWorker::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

bool EngineWorker::take(std::optional<Capture>* capture, std::string* error) {
  std::lock_guard lock(mutex_);
  if (!done_) return false;
  done_ = false;
  *capture = std::move(result_);
  result_.reset();
  *error = std::move(error_);
  error_.clear();
  return true;
}

}  // namespace tv::gui
