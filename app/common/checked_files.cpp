// The file entry points of checked.h, in a file of their own: the front door (app/reader) reads
// captures with them and links no more of the engine than that.
#include "capture/atomic_file.h"
#include "common/checked.h"

namespace tv::app {

std::string read_text_file(const std::string& path) {
  try {
    return capture_detail::read_whole_file(path);
  } catch (const CaptureError& e) {
    throw BadInput(std::string(e.what()) + "; check the path");
  }
}

std::string unwritable(const CaptureError& e) {
  const std::string said = "cannot write: ";
  if (!e.json_path().empty() || e.message().rfind(said, 0) != 0) return std::string("cannot write ") + e.what();
  return "cannot write " + e.file() + ": " + e.message().substr(said.size());
}

void write_output_file(const std::string& path, const std::string& contents) {
  try {
    capture_detail::write_file_atomically(path, contents);
  } catch (const CaptureError& e) {
    throw BadInput(unwritable(e));
  }
}

void check_output_file(const std::string& path) {
  try {
    capture_detail::check_writable(path);
  } catch (const CaptureError& e) {
    throw BadInput(unwritable(e));
  }
}

void save_capture_checked(const Capture& capture, const std::string& path) {
  try {
    save_capture(capture, path);
  } catch (const CaptureError& e) {
    throw BadInput(unwritable(e));
  }
}

Capture load_capture_checked(const std::string& path) {
  try {
    return load_capture(path);
  } catch (const CaptureError& e) {
    throw BadInput(e.what());
  }
}

}  // namespace tv::app
