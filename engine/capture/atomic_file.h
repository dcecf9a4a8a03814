// Atomic file replacement and whole-file reading, with errors that name the path and the reason.
// Contract: write_file_atomically writes `contents` to a new temporary file in the target's folder
// (".<name>.tmp-<pid>-<n>"), flushes and fsyncs it, renames it over `path` and fsyncs the folder.
// Readers see either the old file or the new one, never a mix; on any failure the temporary
// file is removed, the old file is untouched, and CaptureError(path, "", "<step>: <strerror>") is
// thrown. A process killed mid-write can leave its temporary file behind, never a damaged target.
#pragma once
#include <string>
#include <string_view>

namespace tv::capture_detail {

// The prefix of the temporary files a save of `path` creates (for tests and cleanup tools).
std::string temporary_prefix(const std::string& path);
void write_file_atomically(const std::string& path, std::string_view contents);
std::string read_whole_file(const std::string& path);

}  // namespace tv::capture_detail
