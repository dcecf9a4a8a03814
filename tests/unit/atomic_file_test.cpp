// Saves lose nothing and leave nothing (engine/capture/atomic_file.h): leftovers of killed saves
// are removed by the next save, a symbolic link is written through, a read-only file or one that is
// not a regular file (a FIFO, a device node) is refused and kept, a missing folder is named before
// anything is written, and an endless input is refused at the size limit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "capture/atomic_file.h"
#include "capture/capture.h"

namespace fs = std::filesystem;
using tv::CaptureError;
using tv::capture_detail::check_writable;
using tv::capture_detail::read_whole_file;
using tv::capture_detail::temporary_prefix;
using tv::capture_detail::write_file_atomically;

namespace {

struct Folder {
  fs::path path;
  Folder() {
    char name[] = "/tmp/tv_atomic_XXXXXX";
    path = ::mkdtemp(name);
  }
  ~Folder() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The id of a process that has ended (and been reaped).
pid_t ended_process() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

}  // namespace

TEST(AtomicFile, SaveRemovesTemporariesLeftByKilledSaves) {
  Folder dir;
  const std::string target = dir.file("run.tvz.json");
  write_file_atomically(target, "old");
  const std::string prefix = temporary_prefix(target);
  const std::string dead = prefix + std::to_string(ended_process()) + "-0";
  const std::string alive = prefix + std::to_string(::getppid()) + "-3";  // a running process's save
  const std::string other = dir.file(".other.tvz.json.tmp-1-0");           // another file's temporary
  const std::string unrelated = prefix + "notes";                          // not of our naming
  for (const auto& f : {dead, alive, other, unrelated}) std::ofstream(f) << "partial";

  write_file_atomically(target, "new");

  EXPECT_EQ(contents(target), "new");
  EXPECT_FALSE(fs::exists(dead)) << "a killed save's temporary was left behind";
  EXPECT_TRUE(fs::exists(alive)) << "a temporary of a running save was removed";
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(unrelated));
}

TEST(AtomicFile, SymbolicLinkIsWrittenThrough) {
  Folder dir;
  fs::create_directory(dir.path / "real");
  const std::string real = dir.file("real/run.tvz.json");
  write_file_atomically(real, "old");
  const std::string link = dir.file("link.tvz.json");
  fs::create_symlink("real/run.tvz.json", link);  // relative, as `ln -s` makes them
  const std::string link_to_link = dir.file("link2.tvz.json");
  fs::create_symlink(link, link_to_link);

  write_file_atomically(link_to_link, "new");

  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::is_symlink(link_to_link));
  EXPECT_EQ(contents(real), "new");
  EXPECT_EQ(read_whole_file(link_to_link), "new");

  // A dangling link names the file to create.
  const std::string dangling = dir.file("dangling.tvz.json");
  fs::create_symlink("real/created.tvz.json", dangling);
  write_file_atomically(dangling, "created");
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(contents(dir.file("real/created.tvz.json")), "created");

  // A loop of links is an error, not a hang.
  fs::create_symlink(dir.file("loop_b"), dir.file("loop_a"));
  fs::create_symlink(dir.file("loop_a"), dir.file("loop_b"));
  try {
    write_file_atomically(dir.file("loop_a"), "x");
    ADD_FAILURE() << "wrote through a loop of links";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
}

TEST(AtomicFile, ReadOnlyFileIsRefusedAndKept) {
  Folder dir;
  const std::string target = dir.file("kept.tvz.json");
  write_file_atomically(target, "old");
  ::chmod(target.c_str(), 0444);
  try {
    write_file_atomically(target, "new");
    ADD_FAILURE() << "replaced a read-only file";
  } catch (const CaptureError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(target), std::string::npos) << what;
    EXPECT_NE(what.find("read-only (mode 0444)"), std::string::npos) << what;
    EXPECT_NE(what.find("chmod u+w"), std::string::npos) << what;
  }
  EXPECT_EQ(contents(target), "old");
  for (const auto& e : fs::directory_iterator(dir.path)) EXPECT_EQ(e.path().string(), target) << "left behind";

  // Through a link, the message names the read-only target.
  const std::string link = dir.file("link.tvz.json");
  fs::create_symlink(target, link);
  try {
    write_file_atomically(link, "new");
    ADD_FAILURE() << "replaced a read-only file through a link";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find(target + " is read-only"), std::string::npos) << e.what();
  }
  EXPECT_EQ(contents(target), "old");
}

// rename() over a FIFO or a device node would replace the node itself with a plain file.
TEST(AtomicFile, NonRegularTargetIsRefusedAndKept) {
  Folder dir;
  const std::string fifo = dir.file("fifo.tvz.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string link = dir.file("link.tvz.json");
  fs::create_symlink("fifo.tvz.json", link);
  for (const auto& path : {fifo, link}) {
    try {
      write_file_atomically(path, "new");
      ADD_FAILURE() << "replaced a FIFO through " << path;
    } catch (const CaptureError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("a named pipe (FIFO), not a regular file"), std::string::npos) << what;
    }
    EXPECT_THROW(check_writable(path), CaptureError);
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_symlink(link));
  for (const auto& e : fs::directory_iterator(dir.path))
    EXPECT_TRUE(e.path() == fifo || e.path() == link) << e.path() << " left behind";

  // A device node (private: mknod needs root, so only then).
  const std::string node = dir.file("null");
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    EXPECT_THROW(write_file_atomically(node, "new"), CaptureError);
    EXPECT_TRUE(fs::is_character_file(node));
  }
}

// What a write would refuse, check_writable refuses before anything is written.
TEST(AtomicFile, CheckWritableNamesTheMissingFolder) {
  Folder dir;
  const std::string inside = dir.file("nodir/run.tvz.json");
  try {
    check_writable(inside);
    ADD_FAILURE() << "a path in a missing folder passed";
  } catch (const CaptureError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("the folder " + dir.file("nodir") + " does not exist (No such file or directory); create it"),
              std::string::npos)
        << what;
  }
  std::ofstream(dir.file("plain")) << "x";
  EXPECT_THROW(check_writable(dir.file("plain/run.tvz.json")), CaptureError);  // a file where a folder should be
  EXPECT_NO_THROW(check_writable(dir.file("new.tvz.json")));
  EXPECT_NO_THROW(check_writable(dir.file("plain")));  // a regular file to replace
  EXPECT_FALSE(fs::exists(dir.file("new.tvz.json"))) << "the check wrote";
}

TEST(AtomicFile, EndlessInputIsRefusedAtTheLimit) {
  try {
    read_whole_file("/dev/zero");
    ADD_FAILURE() << "read /dev/zero to the end";
  } catch (const CaptureError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("/dev/zero"), std::string::npos) << what;
    EXPECT_NE(what.find("larger than 1024 MiB"), std::string::npos) << what;
  }
}
