#pragma once
/// @file file_utils.hpp
/// File helpers: an RAII descriptor, open flags, sizes, the block device under a file, a
/// cuFile handle registration, and the page-cache helpers.
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include <kvikio/export.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/// An open file descriptor, closed when the object is destroyed (RAII). Move-only; not thread
/// safe (one owner at a time).
class KVIKIO_EXPORT FileWrapper {
 public:
  /// Opens `file_path` with the mode string `flags` ("r", "r+", "w", "w+", "a", "a+"; see
  /// open_fd). Throws like open_fd.
  FileWrapper(const std::string& file_path, const std::string& flags, bool o_direct, mode_t mode);
  /// Holds no descriptor (opened() is false).
  FileWrapper() noexcept = default;
  /// Closes the descriptor, ignoring errors.
  ~FileWrapper() noexcept;
  FileWrapper(const FileWrapper&)            = delete;
  FileWrapper& operator=(const FileWrapper&) = delete;
  /// Takes `o`'s descriptor; `o` is left holding none.
  FileWrapper(FileWrapper&& o) noexcept;
  /// Closes this descriptor, then takes `o`'s.
  FileWrapper& operator=(FileWrapper&& o) noexcept;

  /// Closes any descriptor held, then opens `file_path` like the constructor.
  void open(const std::string& file_path, const std::string& flags, bool o_direct, mode_t mode);
  /// True while a descriptor is held.
  [[nodiscard]] bool opened() const noexcept;
  /// Closes the descriptor when one is held (errors ignored); otherwise does nothing.
  void close() noexcept;
  /// The descriptor, or -1 when none is held.
  [[nodiscard]] int fd() const noexcept;

 private:
  int fd_{-1};
};

/// A cuFile handle registration of a descriptor, deregistered when the object is destroyed
/// (RAII). Move-only. libcufile is loaded at run time: where it or its driver is unusable,
/// register_handle returns an error code instead of registering.
class KVIKIO_EXPORT CUFileHandleWrapper {
 public:
  CUFileHandleWrapper() noexcept = default;
  /// Deregisters the handle when registered.
  ~CUFileHandleWrapper() noexcept;
  CUFileHandleWrapper(const CUFileHandleWrapper&)            = delete;
  CUFileHandleWrapper& operator=(const CUFileHandleWrapper&) = delete;
  /// Takes `o`'s registration; `o` is left unregistered.
  CUFileHandleWrapper(CUFileHandleWrapper&& o) noexcept;
  /// Deregisters this handle, then takes `o`'s registration.
  CUFileHandleWrapper& operator=(CUFileHandleWrapper&& o) noexcept;

  /// Registers `fd` with cuFile (cuFileHandleRegister). Returns the cuFile status (`err`
  /// CU_FILE_SUCCESS on success; CU_FILE_DRIVER_NOT_INITIALIZED, 5001, when libcufile or its
  /// driver is unusable here), or nothing when a handle is already registered.
  std::optional<CUfileError_t> register_handle(int fd) noexcept;
  /// True while a handle is registered.
  [[nodiscard]] bool registered() const noexcept;
  /// The registered handle, or null.
  [[nodiscard]] CUfileHandle_t handle() const noexcept;
  /// Deregisters the handle when registered; otherwise does nothing.
  void unregister_handle() noexcept;

 private:
  CUfileHandle_t handle_{};
  bool registered_{false};
};

/// open(2) flags for the mode string `flags`: "r" read, "w" write (created, truncated), "a"
/// write (created, kept), each with "+" for read and write and with "b" ignored; O_CLOEXEC
/// always, O_DIRECT too when `o_direct`. Throws std::invalid_argument naming `flags` when it
/// is none of these. (Unlike upstream, "a" sets no O_APPEND: pwrite needs its offsets.)
KVIKIO_EXPORT int open_fd_parse_flags(const std::string& flags, bool o_direct);

/// Opens `file_path` with open_fd_parse_flags(flags, o_direct) and `mode` (for a created
/// file). Returns the descriptor, which the caller closes. Throws GenericSystemError (errno,
/// the file named) when open(2) fails, std::invalid_argument for bad `flags`.
KVIKIO_EXPORT int open_fd(const std::string& file_path,
                          const std::string& flags,
                          bool o_direct,
                          mode_t mode);

/// The file status flags of `fd` (fcntl F_GETFL: O_RDONLY/O_WRONLY/O_RDWR, O_DIRECT, ...).
/// Throws GenericSystemError when `fd` is not an open descriptor.
[[nodiscard]] KVIKIO_EXPORT int open_flags(int fd);

/// The size in bytes of the file at `file_path` (stat(2), following links). Throws
/// GenericSystemError naming the file when it cannot be stat'ed.
[[nodiscard]] KVIKIO_EXPORT std::size_t get_file_size(const std::string& file_path);
/// The size in bytes of the open file `file_descriptor` (fstat(2)). Throws GenericSystemError.
[[nodiscard]] KVIKIO_EXPORT std::size_t get_file_size(int file_descriptor);

/// The physical block device under a file (see get_block_device_info).
struct BlockDeviceInfo {
  dev_t id;          ///< the device number (major:minor) of `name`; a key for maps
  unsigned major;    ///< its major number
  unsigned minor;    ///< its minor number
  std::string name;  ///< its kernel name: "nvme0", "sda", "dm-0", ...
};

/// The block device that holds `file_path`, from sysfs: a partition resolves to its disk
/// (sda1 -> sda) and an NVMe namespace to its controller (nvme0n1 -> nvme0); device-mapper
/// and md devices are returned as themselves. Throws GenericSystemError when the file does not
/// exist (errno ENOENT) or its file system is not on a local block device (tmpfs, overlayfs,
/// NFS, FUSE: ENODEV, the file named).
KVIKIO_EXPORT BlockDeviceInfo get_block_device_info(const std::string& file_path);

/// (pages of the file now in the page cache, pages of the file), from mincore() over a
/// read-only map. Throws GenericSystemError naming the file when it cannot be opened or mapped.
KVIKIO_EXPORT std::pair<std::size_t, std::size_t> get_page_cache_info(const std::string& file_path);
/// The same for an open file descriptor (the caller keeps it open).
KVIKIO_EXPORT std::pair<std::size_t, std::size_t> get_page_cache_info(int fd);
/// The same for [offset, offset + length) of the file (upstream's signature): `length` 0
/// means to the end; the range is clamped to the file and counted in whole pages, partial
/// pages at either end included; an `offset` at or past the end gives (0, 0).
KVIKIO_EXPORT std::pair<std::size_t, std::size_t> get_page_cache_info(const std::string& file_path,
                                                                      std::size_t offset,
                                                                      std::size_t length);
/// The same for a range of an open file descriptor.
KVIKIO_EXPORT std::pair<std::size_t, std::size_t> get_page_cache_info(int fd,
                                                                      std::size_t offset,
                                                                      std::size_t length);

/// Asks the kernel to evict the file's clean pages (posix_fadvise DONTNEED). Dirty pages are
/// written back first when `sync_first`. Needs no privileges.
KVIKIO_EXPORT void drop_file_page_cache(const std::string& file_path, bool sync_first = true);
/// The same for an open file descriptor.
KVIKIO_EXPORT void drop_file_page_cache(int fd, bool sync_first = true);
/// The same for the pages wholly inside [offset, offset + length) (`length` 0: to the end),
/// with upstream's argument order.
KVIKIO_EXPORT void drop_file_page_cache(const std::string& file_path,
                                        std::size_t offset,
                                        std::size_t length,
                                        bool sync_first = true);
/// The same for a range of an open file descriptor.
KVIKIO_EXPORT void drop_file_page_cache(int fd,
                                        std::size_t offset,
                                        std::size_t length,
                                        bool sync_first = true);

/// Drops the whole system's page cache by writing to /proc/sys/vm/drop_caches (syncs first
/// when `sync_first`). Needs root: otherwise throws GenericSystemError (PermissionError).
KVIKIO_EXPORT void drop_system_page_cache(bool reclaim_dentries_and_inodes = true,
                                          bool sync_first                  = true);

/// Deprecated name for drop_system_page_cache.
[[deprecated("use drop_system_page_cache")]] inline void clear_page_cache(
  bool reclaim_dentries_and_inodes = true, bool sync_first = true)
{
  drop_system_page_cache(reclaim_dentries_and_inodes, sync_first);
}

}  // namespace kvikio
