#include "tools/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {

std::string named(const std::string& flag, const std::string& path) {
  return flag + " " + printable(path, 200) + ": ";
}

std::string reason() { return std::strerror(errno); }

}  // namespace

void check_output_path(const std::string& flag, const std::string& path) {
  if (path.empty()) throw input_error(flag + ": expected a file path, found ''");
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
    return;
  }
  if (errno != ENOENT) throw input_error(named(flag, path) + "cannot write it: " + reason());
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

std::string write_output_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return "cannot open it for writing: " + reason();
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

}  // namespace lockstep::cli
