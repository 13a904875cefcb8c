#pragma once
/// @file mmap.hpp
/// Read-only memory-mapped access to a file, copied out into host or device buffers.
#include <sys/types.h>

#include <cstddef>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include <kvikio/defaults.hpp>
#include <kvikio/export.hpp>
#include <kvikio/file_handle.hpp>

namespace kvikio {

/// A read-only mapping of `[initial_map_offset, initial_map_offset + initial_map_size)` of a
/// file. Reads copy from the mapping; requests outside the mapped range throw
/// std::out_of_range naming the range. Not thread safe for open/close; reads may run
/// concurrently. Work queued by pread() keeps the mapping alive: closing, moving or
/// destroying the handle before its futures are ready is safe, and the pages are unmapped
/// when the last such task finishes. Truncating the file under a mapping makes reads of the
/// lost pages fault (SIGBUS), as with any mmap.
class KVIKIO_EXPORT MmapHandle {
 public:
  MmapHandle() noexcept = default;
  /// Maps the file. `flags` must be "r" (read-only). Without `initial_map_size` the range
  /// extends to the end of the file; an empty file maps to nothing. Throws GenericSystemError
  /// if the file cannot be opened or mapped, std::out_of_range if the range does not start
  /// inside a non-empty file or ends past it, std::invalid_argument for other flags or for a
  /// range of 0 bytes of a non-empty file (as upstream).
  MmapHandle(const std::string& file_path,
             const std::string& flags                    = "r",
             std::optional<std::size_t> initial_map_size = std::nullopt,
             std::size_t initial_map_offset              = 0,
             mode_t mode                                 = FileHandle::m644,
             std::optional<int> map_flags                = std::nullopt);
  /// Moves the mapping; `other` is left closed.
  MmapHandle(MmapHandle&&) noexcept;
  /// Unmaps this mapping and takes `other`'s; `other` is left closed.
  MmapHandle& operator=(MmapHandle&&) noexcept;
  MmapHandle(const MmapHandle&)            = delete;
  MmapHandle& operator=(const MmapHandle&) = delete;
  ~MmapHandle() noexcept;

  /// Whether the mapping is closed (or was moved from).
  [[nodiscard]] bool closed() const noexcept { return closed_; }
  /// Unmaps and closes the file (idempotent).
  void close() noexcept;

  /// Size of the file in bytes, as when it was mapped. Throws when closed.
  [[nodiscard]] std::size_t file_size() const;
  /// Alias of file_size() (upstream's name).
  [[nodiscard]] std::size_t nbytes() const { return file_size(); }
  /// Bytes mapped.
  [[nodiscard]] std::size_t initial_map_size() const noexcept { return map_size_; }
  /// File offset where the mapping starts.
  [[nodiscard]] std::size_t initial_map_offset() const noexcept { return map_offset_; }
  /// Address of the first mapped byte (file offset initial_map_offset()).
  [[nodiscard]] const void* base_address() const noexcept { return map_data_; }

  /// Copies `size` bytes (default: from `offset` to the end of the mapped range) at file
  /// offset `offset` into `buf` (host or device memory), blocking. Returns the bytes copied.
  std::size_t read(void* buf,
                   std::optional<std::size_t> size = std::nullopt,
                   std::size_t offset              = 0);
  /// Like read, split into `task_size` pieces on the shared pool; non-blocking. The tasks
  /// hold the mapping, so the handle need not outlive the future (the buffer must).
  std::future<std::size_t> pread(void* buf,
                                 std::optional<std::size_t> size = std::nullopt,
                                 std::size_t offset              = 0,
                                 std::size_t task_size           = defaults::task_size(),
                                 ThreadPool* thread_pool         = nullptr);

 private:
  std::size_t checked_size(std::optional<std::size_t> size, std::size_t offset) const;

  std::string path_;
  std::size_t file_size_{0};
  std::size_t map_offset_{0};
  std::size_t map_size_{0};
  void* map_base_{nullptr};        // page-aligned start given to munmap
  std::size_t map_length_{0};      // length given to munmap
  const char* map_data_{nullptr};  // the byte at file offset map_offset_
  // Owns the mapping (munmap when the last owner goes): shared with queued pread tasks.
  std::shared_ptr<void> mapping_;
  bool closed_{true};
};

}  // namespace kvikio
