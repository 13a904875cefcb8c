#include "core/block_device_pools.hpp"

#include <sys/stat.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/file_utils.hpp>

#include "core/logger.hpp"

namespace kvikio::detail {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<dev_t, ThreadPool*> by_st_dev;                  // a file system's st_dev -> pool
  std::map<dev_t, std::unique_ptr<ThreadPool>> by_device;  // the resolved device -> pool
};

// Never destroyed: a FileHandle closed during static destruction may still hold a pool.
Registry& registry()
{
  static auto* r = new Registry();
  return *r;
}

}  // namespace

ThreadPool* block_device_thread_pool(const std::string& path, int fd)
{
  if (!defaults::thread_pool_per_block_device()) { return nullptr; }
  struct stat st {};
  if (::fstat(fd, &st) != 0) { return nullptr; }
  auto& r = registry();
  {
    std::lock_guard lock(r.mutex);
    if (auto it = r.by_st_dev.find(st.st_dev); it != r.by_st_dev.end()) { return it->second; }
  }
  dev_t device = st.st_dev;
  try {
    device = get_block_device_info(path).id;
  } catch (const std::exception& e) {
    // No block device under it (tmpfs, overlayfs, NFS): its file system is the unit.
    KVIKIO_LOG(debug, std::string("per-device thread pool keyed by the file system: ") + e.what());
  }
  ThreadPool* created = nullptr;
  std::unique_ptr<ThreadPool> fresh;
  {
    std::lock_guard lock(r.mutex);
    if (auto it = r.by_device.find(device); it != r.by_device.end()) { created = it->second.get(); }
  }
  if (created == nullptr) {
    // Created outside the lock: a pool registers with the fork handlers under their own lock.
    fresh = std::make_unique<ThreadPool>(defaults::num_threads());
  }
  std::lock_guard lock(r.mutex);
  auto& slot = r.by_device[device];
  if (!slot) { slot = std::move(fresh); }
  r.by_st_dev.emplace(st.st_dev, slot.get());
  return slot.get();
}  // a pool that lost the race to another thread is destroyed here, after the lock

void resize_block_device_pools(unsigned int num_threads)
{
  std::vector<ThreadPool*> pools;
  {
    std::lock_guard lock(registry().mutex);
    for (auto& [device, pool] : registry().by_device) {
      pools.push_back(pool.get());
    }
  }
  for (auto* pool : pools) {
    if (pool->get_thread_count() != num_threads) { pool->reset(num_threads); }
  }
}

}  // namespace kvikio::detail
