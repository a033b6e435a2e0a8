#include "tools/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {

std::string named(const std::string& flag, const std::string& path) {
  return flag + " " + printable(path, 200) + ": ";
}

std::string reason() { return std::strerror(errno); }

int dash_fd = -1;  // what `-` writes to; -1: `-` is a file name like any other

}  // namespace

void send_dash_to(int fd) { dash_fd = fd; }

void check_output_path(const std::string& flag, const std::string& path) {
  if (path.empty()) throw input_error(flag + ": expected a file path, found ''");
  if (path == "-" && dash_fd >= 0) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw input_error(named(flag, path) + "expected a file, found a directory");
    // O_NONBLOCK: a FIFO without a reader fails here instead of hanging.
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw input_error(named(flag, path) + "cannot write it: " + reason());
    const bool writes = ::write(fd, "", 0) == 0;
    const std::string why = writes ? "" : reason();
    ::close(fd);
    if (!writes) throw input_error(named(flag, path) + "cannot write it: " + why);
    if (!S_ISREG(st.st_mode)) return;  // a device or FIFO is written in place
  } else if (errno != ENOENT) {
    throw input_error(named(flag, path) + "cannot write it: " + reason());
  }
  // A regular file is written beside itself and renamed into place: its directory must take a new file.
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw input_error(named(flag, path) + "the directory " + printable(dir, 200) + " does not exist");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw input_error(named(flag, path) + "cannot create a file in " + printable(dir, 200) + ": " + reason());
  }
}

void check_output_dir(const std::string& flag, const std::string& path) {
  if (path.empty()) throw input_error(flag + ": expected a directory, found ''");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw input_error(named(flag, path) + "no such directory: " + reason());
  if (!S_ISDIR(st.st_mode)) throw input_error(named(flag, path) + "expected a directory, found a file");
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    throw input_error(named(flag, path) + "cannot create files in it: " + reason());
  }
}

namespace {

/// Writes all of `text` to `fd` and closes it; "" or why it failed.
std::string write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? reason() : std::string("the write made no progress");
      ::close(fd);
      return "writing it failed: " + why;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return "closing it failed: " + reason();
  return "";
}

}  // namespace

std::string write_output_file(const std::string& given, const std::string& text) {
  if (given == "-" && dash_fd >= 0) {
    const int fd = ::dup(dash_fd);  // write_all closes what it is given
    if (fd < 0) return "cannot write to standard output: " + reason();
    return write_all(fd, text);
  }
  struct stat st {};
  std::string path = given;
  if (::lstat(given.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Through a symbolic link: the file it names is replaced, not the link.
    if (char* real = ::realpath(given.c_str(), nullptr)) {
      path = real;
      std::free(real);
    }
  }
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device or FIFO (/dev/null, a pipe): written in place, never replaced.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return "cannot open it for writing: " + reason();
    return write_all(fd, text);
  }
  // A temporary name beside it, renamed over it once whole: a full disk or a
  // kill mid-write never leaves an empty or a cut file under `path`. The
  // temporary name is short whatever `path`'s is, so any name that fits fits.
  const bool existed = ::stat(path.c_str(), &st) == 0;
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  static std::atomic<unsigned> serial{0};  // explore writes records from one thread, but stay safe
  const std::string tmp = dir + ".lockstep-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return "cannot open it for writing: " + reason();
  // A file replaced keeps its permissions.
  if (existed) (void)::fchmod(fd, st.st_mode & 07777);
  if (std::string why = write_all(fd, text); !why.empty()) {
    ::unlink(tmp.c_str());
    return why;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = "renaming it into place failed: " + reason();
    ::unlink(tmp.c_str());
    return why;
  }
  return "";
}

void remove_stale_output(const std::string& path) {
  if (path == "-" && dash_fd >= 0) return;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
}

}  // namespace lockstep::cli
