#pragma once
/// @file bounce_buffer.hpp
/// The pool of pinned host buffers that device-memory IO on the POSIX path bounces through.
/// Each buffer is `defaults::bounce_buffer_size()` bytes, page aligned; a piece of device IO
/// holds one for its duration, so with N pool threads the pool holds about N buffers.
#include <cstddef>

#include <kvikio/export.hpp>

namespace kvikio {

/// Frees the pooled pinned buffers that are not in use and returns the bytes freed. Buffers
/// in use are freed when returned if the pool is over its bound or their size is stale.
/// Thread safe; never blocks on IO.
KVIKIO_EXPORT std::size_t bounce_buffer_free();

/// Statistics of the pool, for benchmarks and tests.
struct KVIKIO_EXPORT BounceBufferStats {
  std::size_t pinned_bytes;       ///< pinned bytes held now (in use + free)
  std::size_t peak_pinned_bytes;  ///< the most held at once since the process started
};
/// The pinned bounce buffer pool's counters now (allocations, bytes held, peak).
KVIKIO_EXPORT BounceBufferStats bounce_buffer_stats() noexcept;

}  // namespace kvikio
