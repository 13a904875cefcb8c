#pragma once
// The state of an open local file, shared by a FileHandle and the tasks it has queued, so
// that closing the handle never pulls a descriptor from under a running task.
#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include <kvikio/compat_mode.hpp>

namespace kvikio::detail {

/// Which way a request moves data; the read and write paths share one body and branch on it.
enum class Direction { read, write };

class OpenFile {
 public:
  /// Opens the buffered descriptor (throws) and, where the file system allows, an O_DIRECT
  /// one (silently absent otherwise). With `compat_mode` OFF the O_DIRECT descriptor is
  /// registered with cuFile; if that (or the O_DIRECT open) fails, the file falls back to
  /// POSIX (compat_mode() becomes ON) when `allow_fallback`, else CUfileException is thrown.
  OpenFile(std::string path,
           const std::string& flags,
           mode_t mode,
           CompatMode compat_mode,
           bool allow_fallback = true);
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
  /// The cuFile handle (CUfileHandle_t) when compat_mode() is OFF, else null.
  [[nodiscard]] void* cufile_handle() const noexcept { return cufile_handle_; }
  /// Why this file uses POSIX although cuFile was asked for (empty otherwise).
  [[nodiscard]] const std::string& fallback_reason() const noexcept { return fallback_reason_; }
  [[nodiscard]] std::size_t nbytes() const;

  /// Throws std::invalid_argument unless the file was opened for reading (Direction::read)
  /// or writing (Direction::write).
  void require(Direction direction) const;

 private:
  std::string path_;
  int fd_{-1};
  int fd_direct_{-1};
  bool readable_{false};
  bool writable_{false};
  bool append_{false};
  CompatMode compat_mode_{CompatMode::ON};
  void* cufile_handle_{nullptr};
  std::string fallback_reason_;
};

/// open(2) flags for a mode string ("r", "r+", "w", "w+", "a", "a+", with "b" anywhere).
/// Throws std::invalid_argument naming the flags otherwise.
int open_flags_from_mode(const std::string& flags);

}  // namespace kvikio::detail
