#pragma once
// The state of an open local file, shared by a FileHandle and the tasks it has queued, so
// that closing the handle never pulls a descriptor from under a running task.
#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include <kvikio/compat_mode.hpp>

namespace kvikio::detail {

class OpenFile {
 public:
  /// Opens the buffered descriptor (throws) and, where the file system allows, an O_DIRECT
  /// one (silently absent otherwise).
  OpenFile(std::string path, const std::string& flags, mode_t mode, CompatMode compat_mode);
  ~OpenFile() noexcept;
  OpenFile(const OpenFile&)            = delete;
  OpenFile& operator=(const OpenFile&) = delete;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] int fd_direct() const noexcept { return fd_direct_; }
  [[nodiscard]] bool readable() const noexcept { return readable_; }
  [[nodiscard]] bool writable() const noexcept { return writable_; }
  [[nodiscard]] bool append() const noexcept { return append_; }
  [[nodiscard]] CompatMode compat_mode() const noexcept { return compat_mode_; }
  [[nodiscard]] std::size_t nbytes() const;

  /// Throws std::invalid_argument unless the file was opened for reading / writing.
  void require_readable() const;
  void require_writable() const;

 private:
  std::string path_;
  int fd_{-1};
  int fd_direct_{-1};
  bool readable_{false};
  bool writable_{false};
  bool append_{false};
  CompatMode compat_mode_{CompatMode::ON};
};

/// open(2) flags for a mode string ("r", "r+", "w", "w+", "a", "a+", with "b" anywhere).
/// Throws std::invalid_argument naming the flags otherwise.
int open_flags_from_mode(const std::string& flags);

}  // namespace kvikio::detail
