#pragma once
/// @file compat_mode_manager.hpp
/// How a FileHandle resolved the compatibility mode it was opened with (libkvikio's
/// CompatModeManager): the mode asked for, whether its synchronous IO and its stream-ordered
/// (async) IO take the POSIX path. FileHandle::get_compat_mode_manager() returns the one of an
/// open file.
#include <sys/types.h>

#include <string>

#include <kvikio/compat_mode.hpp>
#include <kvikio/export.hpp>

namespace kvikio {

class FileHandle;

/// Resolves a file's compatibility mode once, at open: whether it uses POSIX IO or cuFile
/// (libkvikio's class of the same name).
class KVIKIO_EXPORT CompatModeManager {
 public:
  CompatModeManager() noexcept = default;
  /// Resolves `compat_mode_requested` as a file opened now would: AUTO becomes POSIX unless
  /// GPUDirect Storage works here; async IO also takes POSIX without cuFile's stream API or a
  /// cuFile configuration file (config_path()). When `file_handle` is an open FileHandle, its
  /// own resolution is taken instead (the path, flags and mode are then not used). Throws
  /// CUfileException when OFF is requested and cuFile is not usable.
  CompatModeManager(const std::string& file_path,
                    const std::string& flags,
                    mode_t mode,
                    CompatMode compat_mode_requested,
                    FileHandle* file_handle);
  /// The resolved state as is (how FileHandle records its own).
  CompatModeManager(CompatMode compat_mode_requested,
                    bool is_compat_mode_preferred,
                    bool is_compat_mode_preferred_for_async) noexcept;

  /// True when synchronous device IO takes the POSIX path.
  [[nodiscard]] bool is_compat_mode_preferred() const noexcept;
  /// True when stream-ordered (async) IO takes the POSIX path.
  [[nodiscard]] bool is_compat_mode_preferred_for_async() const noexcept;
  /// The mode asked for.
  [[nodiscard]] CompatMode compat_mode_requested() const noexcept;
  /// Throws CUfileException when OFF was asked for but async IO cannot use cuFile (no stream
  /// API, or no cuFile configuration file), naming what is missing.
  void validate_compat_mode_for_async() const;

 private:
  CompatMode compat_mode_requested_{CompatMode::AUTO};
  bool is_compat_mode_preferred_{true};
  bool is_compat_mode_preferred_for_async_{true};
};

}  // namespace kvikio
