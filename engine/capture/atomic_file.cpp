#include "capture/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "capture/capture.h"

namespace tv::capture_detail {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& step, int err) {
  throw CaptureError(path, "", step + ": " + std::strerror(err));
}

std::string folder_of(const std::string& path) {
  auto parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// Closes a descriptor and removes the temporary file unless it was renamed into place.
struct TempFile {
  std::string name;
  int fd = -1;
  bool renamed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!renamed && !name.empty()) ::unlink(name.c_str());
  }
};

// Where a save of `path` writes: the final target when `path` is a symbolic link (a chain of them
// is followed; a dangling link names the file to create), else `path` itself.
std::string write_target(const std::string& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec)) || ec) return p.string();
    fs::path next = fs::read_symlink(p, ec);
    if (ec) fail(path, "cannot read the symbolic link " + p.string(), ec.value());
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  fail(path, "cannot follow the symbolic link", ELOOP);
}

// What kind of file `mode` is, for a message ("a character device").
std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

// Refuses what rename() would replace wrongly: an existing target that is not a regular file (a
// device node, a FIFO: rename swaps the node itself for a plain file) or that the user cannot
// write (rename would replace it silently).
void check_replaceable(const std::string& path, const std::string& target) {
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) return;
  if (!S_ISREG(st.st_mode))
    throw CaptureError(path, "",
                       "cannot write: " + (target == path ? std::string("it") : target) + " is " + file_kind(st.st_mode) +
                           ", not a regular file (left untouched); give the name of a regular file to create or replace");
  if ((st.st_mode & 0222) == 0 || ::access(target.c_str(), W_OK) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw CaptureError(path, "",
                       std::string("cannot write: ") + (target == path ? "the file" : target) + " is read-only (mode " +
                           mode + "); make it writable (chmod u+w) or save under another name");
  }
}

// Refuses a target whose folder is missing or not writable (the temporary file goes there).
void check_folder(const std::string& path, const std::string& target) {
  const std::string folder = folder_of(target);
  auto refuse = [&](const std::string& what, int err, const std::string& fix) {
    throw CaptureError(path, "", "cannot write: the folder " + folder + " " + what + " (" + std::strerror(err) + "); " + fix);
  };
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) refuse("does not exist", err, "create it (mkdir -p " + folder + ") or give a path in an existing folder");
    refuse("cannot be read", err, "give a path in another folder");
  }
  if (!S_ISDIR(st.st_mode)) refuse("is a file", ENOTDIR, "give a path in an existing folder");
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    int err = errno;
    refuse("is not writable", err, "make it writable or give a path in another folder");
  }
}

// Removes temporaries of earlier saves of `target` whose process no longer runs (killed mid-save).
void remove_stale_temporaries(const std::string& target) {
  const fs::path prefix = temporary_prefix(target);
  const std::string start = prefix.filename().string();
  std::error_code ec;
  fs::directory_iterator it(folder_of(target), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(start, 0) != 0) continue;
    // The rest is "<pid>-<n>".
    const std::string rest = name.substr(start.size());
    size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.find_first_not_of("0123456789-") != std::string::npos) continue;
    long pid = 0;
    try {
      pid = std::stol(rest.substr(0, dash));
    } catch (...) {
      continue;
    }
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running (or not ours to ask)
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

void write_all(int fd, std::string_view data, const std::string& path) {
  // Chunks of 1 MiB: progress on a large capture is visible and a short write is retried.
  constexpr size_t kChunk = 1 << 20;
  size_t done = 0;
  while (done < data.size()) {
    size_t n = std::min(kChunk, data.size() - done);
    ssize_t w = ::write(fd, data.data() + done, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot write the temporary file", errno);
    }
    done += static_cast<size_t>(w);
  }
}

}  // namespace

std::string temporary_prefix(const std::string& path) {
  auto p = fs::path(path);
  return (p.parent_path() / ("." + p.filename().string() + ".tmp-")).string();
}

void check_writable(const std::string& path) {
  if (path.empty()) throw CaptureError(path, "", "cannot write: the path is empty");
  if (fs::path(path).filename().empty()) throw CaptureError(path, "", "cannot write: the path names a folder");
  const std::string target = write_target(path);
  check_replaceable(path, target);
  check_folder(path, target);
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  static std::atomic<unsigned> counter{0};
  check_writable(path);
  const std::string target = write_target(path);
  remove_stale_temporaries(target);

  TempFile tmp;
  tmp.name = temporary_prefix(target) + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  tmp.fd = ::open(tmp.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (tmp.fd < 0) {
    int err = errno;
    tmp.name.clear();  // nothing was created
    fail(path, "cannot create a temporary file in " + folder_of(target), err);
  }
  // Keep the permissions of the file being replaced.
  struct stat old {};
  if (::stat(target.c_str(), &old) == 0 && S_ISREG(old.st_mode)) ::fchmod(tmp.fd, old.st_mode & 07777);

  write_all(tmp.fd, contents, path);
  if (::fsync(tmp.fd) != 0) fail(path, "cannot flush the temporary file to disk", errno);
  int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) fail(path, "cannot close the temporary file", errno);
  if (::rename(tmp.name.c_str(), target.c_str()) != 0) fail(path, "cannot replace the file", errno);
  tmp.renamed = true;

  // Make the rename itself durable; a folder that cannot be opened or synced is not an error.
  int dir = ::open(folder_of(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

namespace {

// Opens `path` for reading and fills `st`; a folder is refused. The caller closes the descriptor.
int open_for_reading(const std::string& path, struct stat& st) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open", errno);
  if (::fstat(fd, &st) != 0) st = {};
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw CaptureError(path, "", "cannot read: it is a folder");
  }
  return fd;
}

// Reads `fd` to its end, at most kMaxInputBytes, and closes it.
std::string read_to_end(int fd, const struct stat& st, const std::string& path) {
  std::string out;
  // A regular file's size is known: one allocation, not a doubling string's copies.
  if (S_ISREG(st.st_mode) && st.st_size > 0 && static_cast<uint64_t>(st.st_size) <= kMaxInputBytes)
    out.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      fail(path, "cannot read", err);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > kMaxInputBytes) {
      ::close(fd);
      throw CaptureError(path, "", "cannot read: the input is larger than " + std::to_string(kMaxInputBytes >> 20) +
                                       " MiB, the most this tool reads (is it the right file?)");
    }
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

std::string read_whole_file(const std::string& path) {
  struct stat st {};
  int fd = open_for_reading(path, st);
  return read_to_end(fd, st, path);
}

WholeFile WholeFile::open(const std::string& path) {
  WholeFile file;
  struct stat st {};
  int fd = open_for_reading(path, st);
  if (S_ISREG(st.st_mode) && st.st_size > 0 && static_cast<uint64_t>(st.st_size) <= kMaxInputBytes) {
    void* at = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (at != MAP_FAILED) {
      ::close(fd);
      file.mapped_ = static_cast<const char*>(at);
      file.size_ = static_cast<size_t>(st.st_size);
      return file;
    }
  }
  file.read_ = read_to_end(fd, st, path);  // a pipe, a device, or a mapping refused: the same descriptor, read
  return file;
}

WholeFile::WholeFile(WholeFile&& other) noexcept
    : mapped_(std::exchange(other.mapped_, nullptr)), size_(std::exchange(other.size_, 0)), read_(std::move(other.read_)) {}

WholeFile::~WholeFile() {
  if (mapped_) ::munmap(const_cast<char*>(mapped_), size_);
}

}  // namespace tv::capture_detail
