#pragma once
// Staging a remote range through two bounce buffers on its way to memory the network cannot
// write directly (device memory). Kept free of CUDA so it can be tested with host memory.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace kvikio::detail {

/// A sink (see transfer.hpp) that packs the bytes of a range into two alternating staging
/// buffers of `capacity` bytes. When one is full it is handed to `flush(slot, staged, nbytes,
/// dest_offset)`, which should start an asynchronous copy to the destination at
/// `dest_offset`; filling continues in the other buffer, and before a buffer is reused
/// `wait(slot)` must block until that buffer's copy has finished. So the network transfer
/// overlaps the copies, and memory stays at two buffers. `finish()` flushes the last partial
/// buffer and waits for every copy; call it once the range is complete.
///
/// For device memory: the buffers are pinned host memory, flush is an async host-to-device
/// copy on the thread's stream recorded on an event per slot, and wait synchronises on the
/// slot's event.
class StagingSink {
 public:
  using Flush =
    std::function<void(int slot, const char* staged, std::size_t nbytes, std::size_t dest_offset)>;
  using Wait = std::function<void(int slot)>;

  StagingSink(char* buffer0, char* buffer1, std::size_t capacity, Flush flush, Wait wait)
    : buffers_{buffer0, buffer1},
      capacity_(capacity),
      flush_(std::move(flush)),
      wait_(std::move(wait))
  {
    if (buffer0 == nullptr || buffer1 == nullptr || capacity == 0) {
      throw std::invalid_argument("StagingSink: two buffers of a non-zero capacity are needed");
    }
  }

  /// Appends `n` bytes (the sink signature of fetch_range).
  void operator()(const char* data, std::size_t n)
  {
    while (n > 0) {
      if (fill_ == capacity_) { rotate(); }
      std::size_t take = std::min(n, capacity_ - fill_);
      std::memcpy(buffers_[slot_] + fill_, data, take);
      fill_ += take;
      data += take;
      n -= take;
    }
  }

  /// Flushes what is staged and waits for all copies. Returns the bytes delivered.
  std::size_t finish()
  {
    if (fill_ > 0) { rotate(); }
    for (int s = 0; s < 2; ++s) {
      if (in_flight_[s]) {
        wait_(s);
        in_flight_[s] = false;
      }
    }
    return delivered_;
  }

 private:
  void rotate()
  {
    flush_(slot_, buffers_[slot_], fill_, delivered_);
    in_flight_[slot_] = true;
    delivered_ += fill_;
    fill_ = 0;
    slot_ = 1 - slot_;
    if (in_flight_[slot_]) {
      wait_(slot_);
      in_flight_[slot_] = false;
    }
  }

  std::array<char*, 2> buffers_;
  std::size_t capacity_;
  Flush flush_;
  Wait wait_;
  int slot_{0};
  std::size_t fill_{0};
  std::size_t delivered_{0};
  std::array<bool, 2> in_flight_{false, false};
};

}  // namespace kvikio::detail
