// tools/output_file.hpp — files the CLI writes (traces, failure records):
// checked before a run, so a bad path costs nothing, and checked after the
// write, so a full disk is never mistaken for success.
#pragma once

#include <string>

namespace lockstep::cli {

/// `-` names standard output where main() allowed it: the file descriptor
/// that was stdout (main sends the CLI's own text to stderr meanwhile).
void send_dash_to(int fd);

/// Throws input_error (naming `flag` and `path`) unless `path` could be
/// written now: not empty, not a directory, an existing file open for writing
/// and accepting a write (a zero-byte write: /dev/full refuses even that), or
/// a new file in an existing, writable directory. Touches nothing.
void check_output_path(const std::string& flag, const std::string& path);

/// Throws input_error unless `path` is an existing, writable directory.
void check_output_dir(const std::string& flag, const std::string& path);

/// Replaces `path` with `text`; returns "" on success, else why it failed
/// (open, write, close or rename, with the system's reason). A regular file
/// is written under a temporary name beside it and renamed into place, so
/// `path` is never left empty or cut (a full disk, a kill); a device or FIFO
/// is written in place.
std::string write_output_file(const std::string& path, const std::string& text);

/// Removes `path` if it is a regular file: an output that a run writes at its
/// end (explore's --json, --junit) goes away when the run starts, so a run
/// killed before its end leaves no stale file from an earlier run.
void remove_stale_output(const std::string& path);

}  // namespace lockstep::cli
