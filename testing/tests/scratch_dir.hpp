// A directory for one test's records, under the system's temp directory and
// named with the process id, emptied when it is handed out and removed when
// the process exits, so that runs of the tests leave nothing behind.
// LOCKSTEP_KEEP_SCRATCH=1 keeps them, to read a failing test's records.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <unistd.h>
#include <vector>
#include <sys/types.h>

namespace lockstep::testing_scratch {

class scratch_dirs {
 public:
  scratch_dirs() = default;
  scratch_dirs(const scratch_dirs&) = delete;
  scratch_dirs& operator=(const scratch_dirs&) = delete;
  ~scratch_dirs() {
    const char* keep = std::getenv("LOCKSTEP_KEEP_SCRATCH");
    if (keep != nullptr && std::string(keep) == "1") return;
    if (::getpid() != owner_) return;  // a forked child exiting: the parent's to remove
    std::error_code ignored;  // nothing to report at exit: a leftover is no failure
    for (const auto& d : dirs_) std::filesystem::remove_all(d, ignored);
  }
  std::string add(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    dirs_.push_back(dir);
    return dir.string();
  }

 private:
  ::pid_t owner_ = ::getpid();
  std::vector<std::filesystem::path> dirs_;
};

/// "<temp>/<name>-<pid>", empty, removed at exit.
inline std::string scratch_dir(const std::string& name) {
  static scratch_dirs dirs;
  return dirs.add(name);
}

}  // namespace lockstep::testing_scratch
