// Atomic file replacement and whole-file reading, with errors that name the path and the reason.
// Contract: write_file_atomically writes `contents` to a new temporary file in the target's folder
// (".<name>.tmp-<pid>-<n>"), flushes and fsyncs it, renames it over `path` and fsyncs the folder.
// Readers see either the old file or the new one, never a mix; on any failure the temporary
// file is removed, the old file is untouched, and CaptureError(path, "", "<step>: <strerror>") is
// thrown. A process killed mid-write can leave its temporary file behind, never a damaged target;
// the next save of the same path removes such leftovers (temporaries of that name whose process
// no longer runs).
//  - A symbolic link is written through: its final target is replaced, the link stays a link.
//  - An existing target without write permission (e.g. mode 0444) is refused, not replaced.
//  - An existing target that is not a regular file (a device node, a FIFO, a folder) is refused
//    and left as it is: rename() would swap the node itself for a plain file.
// check_writable(path) makes the checks a write makes before it writes anything (the path, the
// target, its folder exists and is writable) and throws the same CaptureError; a command calls it
// before long work so that an output it cannot write costs nothing.
// read_whole_file reads at most kMaxInputBytes; a larger (or endless, /dev/zero) input is refused
// with a CaptureError that names the limit. WholeFile::open gives the same bytes without copying a
// regular file: it is mapped read-only and its pages are brought in by one system call (a page
// fault per page of a freshly allocated copy costs a large load a sixth of its time).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace tv::capture_detail {

// The prefix of the temporary files a save of `path` creates (for tests and cleanup tools).
std::string temporary_prefix(const std::string& path);
inline constexpr size_t kMaxInputBytes = size_t(1) << 30;  // 1 GiB

void check_writable(const std::string& path);
void write_file_atomically(const std::string& path, std::string_view contents);
std::string read_whole_file(const std::string& path);

class WholeFile {
 public:
  static WholeFile open(const std::string& path);
  WholeFile(WholeFile&& other) noexcept;
  WholeFile& operator=(WholeFile&&) = delete;
  ~WholeFile();
  std::string_view bytes() const { return mapped_ ? std::string_view(mapped_, size_) : std::string_view(read_); }

 private:
  WholeFile() = default;
  const char* mapped_ = nullptr;  // a regular file's mapping, or null when the bytes were read
  size_t size_ = 0;
  std::string read_;              // a pipe's or a device's bytes
};

}  // namespace tv::capture_detail
