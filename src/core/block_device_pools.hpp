#pragma once
// KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE: one thread pool per block device, so that requests to
// files on different disks do not queue behind each other in one pool.
#include <string>

#include <kvikio/threadpool.hpp>

namespace kvikio::detail {

/// The pool that the tasks of the file `path` (open as `fd`) run on when it is opened now:
/// null unless defaults::thread_pool_per_block_device(), else the pool of the file's block
/// device (get_block_device_info: a partition counts as its disk, an NVMe namespace as its
/// controller), or of its file system (st_dev) where no block device is under it (tmpfs,
/// overlayfs, NFS). Pools are created on first use with defaults::num_threads() threads and
/// live until the process exits. Thread safe.
ThreadPool* block_device_thread_pool(const std::string& path, int fd);

/// Resizes every per-device pool to `num_threads` (set_num_threads does so with the shared
/// pool). Waits for each pool's queued tasks.
void resize_block_device_pools(unsigned int num_threads);

}  // namespace kvikio::detail
