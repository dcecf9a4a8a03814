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
// read_whole_file reads at most kMaxInputBytes; a larger (or endless, /dev/zero) input is refused
// with a CaptureError that names the limit.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace tv::capture_detail {

// The prefix of the temporary files a save of `path` creates (for tests and cleanup tools).
std::string temporary_prefix(const std::string& path);
inline constexpr size_t kMaxInputBytes = size_t(1) << 30;  // 1 GiB

void write_file_atomically(const std::string& path, std::string_view contents);
std::string read_whole_file(const std::string& path);

}  // namespace tv::capture_detail
