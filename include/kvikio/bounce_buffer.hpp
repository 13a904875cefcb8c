#pragma once
/// @file bounce_buffer.hpp
/// The pool of pinned host buffers that device-memory IO on the POSIX path bounces through.
/// Each buffer is `defaults::bounce_buffer_size()` bytes, page aligned; a piece of device IO
/// holds one for its duration, so with N pool threads the pool holds about N buffers.
#include <cstddef>

#include <kvikio/export.hpp>
// At least what upstream's header of this name makes visible: code written for it relies on it.
#include <kvikio/defaults.hpp>

namespace kvikio {

/// Frees the pooled pinned buffers that are not in use and returns the bytes freed, each buffer
/// counted as the `bounce_buffer_size` it was used with (as upstream; the pinned block behind
/// it is that size rounded to whole pages, at least two, which bounce_buffer_stats() counts).
/// Buffers in use are freed when returned if the pool is over its bound or their size is
/// stale. Thread safe; never blocks on IO.
KVIKIO_EXPORT std::size_t bounce_buffer_free();

/// Statistics of the pool, for benchmarks and tests.
struct KVIKIO_EXPORT BounceBufferStats {
  std::size_t pinned_bytes;       ///< pinned bytes held now (in use + free)
  std::size_t peak_pinned_bytes;  ///< the most held at once since the process started
};
/// The pinned bounce buffer pool's counters now (allocations, bytes held, peak).
KVIKIO_EXPORT BounceBufferStats bounce_buffer_stats() noexcept;

}  // namespace kvikio
