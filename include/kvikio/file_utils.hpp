#pragma once
/// @file file_utils.hpp
/// Page-cache helpers.
#include <cstddef>
#include <string>
#include <utility>

#include <kvikio/export.hpp>

namespace kvikio {

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
