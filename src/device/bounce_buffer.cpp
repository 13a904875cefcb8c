#include "device/bounce_buffer.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>

#include "core/alignment.hpp"
#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"

namespace kvikio::detail {
namespace {

// A free buffer: its pinned block and the bounce_buffer_size it was last taken for (what
// bounce_buffer_free() counts, as upstream: the block is rounded up to whole pages).
struct FreeBuffer {
  char* data;
  std::size_t size;
  std::size_t requested;
};

struct Pool {
  std::mutex mutex;
  std::vector<FreeBuffer> free;
  std::atomic<std::size_t> held{0};
  std::atomic<std::size_t> peak{0};
  std::atomic<std::uint64_t> generation{0};  // bumped in a forked child
};

void after_fork_in_child() noexcept;

Pool& pool()
{
  // Leaked on purpose: buffers may come back from threads that outlive static destruction.
  static auto* p = [] {
    ::pthread_atfork(nullptr, nullptr, &after_fork_in_child);
    return new Pool();
  }();
  return *p;
}

// The parent's pinned buffers are unusable in a forked child (CUDA state does not survive
// fork, and pinned pages are not inherited), and the CUDA driver must not be called here:
// forget them without freeing. The lock may have been held by a thread that does not exist
// in the child, so it is built anew; buffers of the old generation are never pooled again.
void after_fork_in_child() noexcept
{
  auto& p = pool();
  new (&p.mutex) std::mutex();
  new (&p.free) std::vector<FreeBuffer>();
  p.held = 0;
  ++p.generation;
}

// Pinned buffers are allocated in device 0's primary context, retained for the process, so
// they outlive any context a user creates and destroys; PORTABLE makes them usable from all.
void free_pinned(char* p, std::size_t n) noexcept
{
  const auto& api = CudaAPI::instance();
  try {
    ContextGuard guard(primary_context(0));
    api.MemFreeHost(p);
  } catch (...) {  // freeing at teardown: nothing useful to report
  }
  pool().held -= n;
}

std::size_t rounded_buffer_size()
{
  // Page multiple, and at least two pages so that each half of a buffer is a whole page.
  const std::size_t n = defaults::bounce_buffer_size();
  return std::max<std::size_t>(2 * page_size, n / page_size * page_size);
}

}  // namespace

BounceBuffer::BounceBuffer()
{
  const std::size_t want = rounded_buffer_size();
  requested_             = defaults::bounce_buffer_size();
  auto& p                = pool();
  {
    std::lock_guard lock(p.mutex);
    while (!p.free.empty()) {
      const FreeBuffer b = p.free.back();
      p.free.pop_back();
      if (b.size == want) {
        data_       = b.data;
        size_       = b.size;
        generation_ = p.generation;
        return;
      }
      free_pinned(b.data, b.size);  // bounce_buffer_size changed since it was allocated
    }
  }
  const auto& api = *cuda_api_or_throw("allocating a pinned bounce buffer");
  ContextGuard guard(primary_context(0));
  void* mem = nullptr;
  cuda_check(api.MemHostAlloc(&mem, want, CU_MEMHOSTALLOC_PORTABLE),
             "cuMemHostAlloc",
             "for a bounce buffer of " + std::to_string(want) + " bytes");
  data_               = static_cast<char*>(mem);
  size_               = want;
  generation_         = p.generation;
  const auto now_held = p.held += want;
  auto peak           = p.peak.load();
  while (now_held > peak && !p.peak.compare_exchange_weak(peak, now_held)) {}
}

BounceBuffer::~BounceBuffer() noexcept
{
  auto& p = pool();
  if (generation_ != p.generation) { return; }  // allocated before a fork: see above
  std::size_t keep = 1;
  std::size_t want = 0;
  try {
    keep = defaults::num_threads();
    want = rounded_buffer_size();
  } catch (...) {  // unreadable settings: free rather than keep
  }
  std::lock_guard lock(p.mutex);
  // Keep at most one free buffer per pool thread; a stale size is never reused.
  if (p.free.size() < keep && size_ == want) {
    p.free.push_back(FreeBuffer{data_, size_, requested_});
  } else {
    free_pinned(data_, size_);
  }
}

std::size_t bounce_buffer_pinned_bytes() noexcept { return pool().held.load(); }
std::size_t bounce_buffer_peak_pinned_bytes() noexcept { return pool().peak.load(); }

}  // namespace kvikio::detail

namespace kvikio {

std::size_t bounce_buffer_free()
{
  auto& p = detail::pool();
  std::vector<detail::FreeBuffer> released;
  {
    std::lock_guard lock(p.mutex);
    released.swap(p.free);
  }
  std::size_t bytes = 0;
  for (const auto& b : released) {
    detail::free_pinned(b.data, b.size);
    bytes += b.requested;
  }
  return bytes;
}

BounceBufferStats bounce_buffer_stats() noexcept
{
  return {detail::bounce_buffer_pinned_bytes(), detail::bounce_buffer_peak_pinned_bytes()};
}

}  // namespace kvikio
