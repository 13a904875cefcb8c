#pragma once
// Pinned (page-locked) host buffers that device IO bounces through. Pooled and reused, never
// allocated per call: each in-flight device piece holds one buffer of bounce_buffer_size, so
// the pool holds at most (pool threads + callers doing device IO on their own thread) buffers.
#include <cstddef>
#include <cstdint>

namespace kvikio::detail {

/// A pooled pinned buffer, returned to the pool by the destructor.
class BounceBuffer {
 public:
  /// Takes a free buffer of the current bounce_buffer_size from the pool, or allocates one
  /// (cuMemHostAlloc, portable, in device 0's primary context). Throws if the driver is missing.
  BounceBuffer();
  ~BounceBuffer() noexcept;
  BounceBuffer(const BounceBuffer&)            = delete;
  BounceBuffer& operator=(const BounceBuffer&) = delete;

  /// Page-aligned start of the buffer.
  [[nodiscard]] char* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  char* data_{nullptr};
  std::size_t size_{0};
  std::size_t requested_{0};     // bounce_buffer_size when taken (size_ is whole pages)
  std::uint64_t generation_{0};  // the pool's generation when taken (a fork starts a new one)
};

/// Bytes of pinned memory the pool holds now (in use and free), and the most it ever held.
std::size_t bounce_buffer_pinned_bytes() noexcept;
std::size_t bounce_buffer_peak_pinned_bytes() noexcept;

}  // namespace kvikio::detail
