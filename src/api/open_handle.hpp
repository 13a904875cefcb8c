#pragma once
// What a FileHandle shares with the tasks it has queued: the file's descriptors and, when it
// does its device IO through cuFile, its registration. Closing the handle drops only the
// handle's reference, so a running task never loses a descriptor or a cuFile handle.
#include <sys/types.h>

#include <memory>
#include <string>

#include <kvikio/compat_mode.hpp>
#include <kvikio/compat_mode_manager.hpp>
#include <kvikio/file_handle.hpp>

#include "core/open_file.hpp"
#include "gds/cufile_io.hpp"

namespace kvikio::detail {

struct OpenHandle {
  OpenHandle(const std::string& path, const std::string& flags, mode_t mode)
    : file(path, flags, mode)
  {
  }

  OpenFile file;
  CufileRegistration cufile;         // empty when device memory goes through the bounce buffers
  std::string fallback_reason;       // why cuFile was asked for but is not used; empty otherwise
  CompatModeManager compat_manager;  // the request and how it resolved (upstream's view)
  ThreadPool* pool{nullptr};         // its block device's pool (thread_pool_per_block_device)

  /// OFF when this file moves device memory through cuFile, ON when through POSIX.
  [[nodiscard]] CompatMode compat_mode() const noexcept
  {
    return cufile ? CompatMode::OFF : CompatMode::ON;
  }
};

/// Opens `path` and decides, once, how its device IO runs. AUTO resolves through
/// defaults::is_compat_mode_preferred; where it picks cuFile, a file whose O_DIRECT open or
/// registration fails falls back to POSIX (fallback_reason says why). OFF insists on cuFile:
/// CUfileException naming the file when cuFile is unusable for it.
std::shared_ptr<OpenHandle> open_handle(const std::string& path,
                                        const std::string& flags,
                                        mode_t mode,
                                        CompatMode requested);

}  // namespace kvikio::detail
