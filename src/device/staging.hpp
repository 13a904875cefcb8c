#pragma once
// The one pipeline for every copy between host bytes and device memory: a pooled pinned bounce
// buffer used as two halves, so host work on one half (a file read or write, a network piece,
// a memcpy) overlaps the copy engine's work on the other. The schedules (StagingSink,
// DrainSource) are free of CUDA and tested with host memory; DeviceStager and DeviceDrainer
// run them with the driver on the calling thread's stream. No vendor header: remote/ and the
// host-only tests include this.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

struct CUctx_st;

namespace kvikio::detail {

/// The host -> destination schedule. Bytes arrive in order, appended (operator(), the sink
/// signature of fetch_range) or written in place (space() then commit()), into the current
/// one of two halves of `capacity` bytes. A full half goes to `copy(staged, nbytes,
/// dest_offset)`, which starts an asynchronous copy to the destination at `dest_offset`, and
/// filling continues in the other half. Before starting a copy it calls `wait()`, which must
/// block until every copy started so far has finished: so one copy at most is in flight, it
/// runs while the other half fills, and a half is never refilled while a copy reads it.
/// `finish()` copies the last partial half and waits for it. Single-threaded.
class StagingSink {
 public:
  using Copy = std::function<void(const char* staged, std::size_t nbytes, std::size_t dest_offset)>;
  using Wait = std::function<void()>;

  StagingSink(char* half0, char* half1, std::size_t capacity, Copy copy, Wait wait)
    : halves_{half0, half1}, capacity_(capacity), copy_(std::move(copy)), wait_(std::move(wait))
  {
    if (half0 == nullptr || half1 == nullptr || capacity == 0) {
      throw std::invalid_argument("StagingSink: two buffers of a non-zero capacity are needed");
    }
  }

  /// Appends `n` bytes, copying them into the halves.
  void operator()(const char* data, std::size_t n)
  {
    while (n > 0) {
      auto free           = space();
      const std::size_t k = std::min(n, free.size());
      std::memcpy(free.data(), data, k);
      commit(k);
      data += k;
      n -= k;
    }
  }

  /// The unfilled rest of the current half (never empty), for a producer that writes in place.
  [[nodiscard]] std::span<char> space() const noexcept
  {
    return {halves_[slot_] + fill_, capacity_ - fill_};
  }

  /// Marks the first `n` bytes of space() as filled; a half that is now full is copied.
  void commit(std::size_t n)
  {
    if (n > capacity_ - fill_) {
      throw std::invalid_argument("StagingSink::commit: more bytes than space() offered");
    }
    fill_ += n;
    if (fill_ == capacity_) { flush(); }
  }

  /// Copies what is staged and waits for it. Returns the bytes delivered.
  std::size_t finish()
  {
    if (fill_ > 0) { flush(); }
    settle();
    return delivered_;
  }

 private:
  void settle()
  {
    if (in_flight_) {
      in_flight_ = false;
      wait_();
    }
  }
  void flush()
  {
    // The copy in flight reads the other half, the one filled next.
    settle();
    copy_(halves_[slot_], fill_, delivered_);
    in_flight_ = true;
    delivered_ += fill_;
    fill_ = 0;
    slot_ = 1 - slot_;
  }

  std::array<char*, 2> halves_;
  std::size_t capacity_;
  Copy copy_;
  Wait wait_;
  int slot_{0};
  std::size_t fill_{0};
  std::size_t delivered_{0};
  bool in_flight_{false};
};

/// The source -> host schedule, the mirror of StagingSink: `size` bytes of a source come back
/// as chunks of up to `capacity` bytes in two alternating halves. `copy(half, nbytes,
/// src_offset)` starts an asynchronous copy of the source's [src_offset, src_offset + nbytes)
/// into a half; `wait()` must block until every copy started so far has finished. While the
/// caller consumes a chunk, the copy of the next one runs into the other half. Single-threaded.
class DrainSource {
 public:
  using Copy = std::function<void(char* half, std::size_t nbytes, std::size_t src_offset)>;
  using Wait = std::function<void()>;

  /// A chunk of the source in host memory: bytes [offset, offset + size). Mutable, since the
  /// half is the caller's until the next call (POSIX writes take a char*).
  struct Chunk {
    char* data{nullptr};
    std::size_t size{0};
    std::size_t offset{0};
  };

  DrainSource(
    char* half0, char* half1, std::size_t capacity, std::size_t size, Copy copy, Wait wait)
    : halves_{half0, half1},
      capacity_(capacity),
      size_(size),
      copy_(std::move(copy)),
      wait_(std::move(wait))
  {
    if (half0 == nullptr || half1 == nullptr || capacity == 0) {
      throw std::invalid_argument("DrainSource: two buffers of a non-zero capacity are needed");
    }
  }

  /// The next chunk, in order; size 0 once all `size` bytes were returned. A chunk stays
  /// valid until the next call, which starts copying into its half.
  Chunk next()
  {
    if (pos_ == size_) { return {nullptr, 0, pos_}; }
    if (!in_flight_) { start(); }  // the first chunk
    in_flight_ = false;
    wait_();
    const Chunk ready{halves_[slot_], chunk(), pos_};
    pos_ += ready.size;
    slot_ = 1 - slot_;
    if (pos_ < size_) { start(); }
    return ready;
  }

 private:
  [[nodiscard]] std::size_t chunk() const noexcept { return std::min(capacity_, size_ - pos_); }
  void start()
  {
    copy_(halves_[slot_], chunk(), pos_);
    in_flight_ = true;
  }

  std::array<char*, 2> halves_;
  std::size_t capacity_;
  std::size_t size_;
  Copy copy_;
  Wait wait_;
  int slot_{0};
  std::size_t pos_{0};
  bool in_flight_{false};
};

/// Host bytes -> device memory at `dst` (in context `ctx`, which it makes current on the
/// calling thread for its life), through a pooled bounce buffer with StagingSink's schedule;
/// the copies run on this thread's stream in `ctx`. Feed the bytes in order, then call
/// finish(). The destructor waits for queued copies, so the buffer goes back to the pool
/// unread even when feeding threw. Errors are CudaDriverError naming `what`; a failed
/// copy also names its chunk ("the N bytes at byte P" of the destination). One thread only.
class DeviceStager {
 public:
  /// Throws when the driver is not available or no pinned buffer can be had. `chunk`, when
  /// not 0, caps a half at that many bytes (rounded up to whole pages): a transfer of a few
  /// halves' worth overlaps its host work with its copies, where one half would hold it all
  /// and leave the copy of the whole of it to wait at the end.
  DeviceStager(CUctx_st* ctx, void* dst, std::string what, std::size_t chunk = 0);
  ~DeviceStager() noexcept;
  DeviceStager(const DeviceStager&)            = delete;
  DeviceStager& operator=(const DeviceStager&) = delete;

  /// Appends `n` bytes (usable as a remote Sink through std::ref).
  void operator()(const char* data, std::size_t n);
  /// In-place filling; see StagingSink. A half starts page aligned, so a producer that fills
  /// whole halves may read into them with O_DIRECT.
  [[nodiscard]] std::span<char> space() const noexcept;
  void commit(std::size_t n);
  /// Copies the rest and waits until every byte is on the device. Returns the bytes delivered.
  std::size_t finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Device memory [src, src + size) (in context `ctx`, current on the calling thread for its
/// life) -> host chunks, through a pooled bounce buffer with DrainSource's schedule: the copy
/// of the next chunk runs while the caller consumes one. The destructor waits for a queued
/// copy before the buffer goes back to the pool. Errors as for DeviceStager. One thread only.
class DeviceDrainer {
 public:
  DeviceDrainer(CUctx_st* ctx, const void* src, std::size_t size, std::string what);
  ~DeviceDrainer() noexcept;
  DeviceDrainer(const DeviceDrainer&)            = delete;
  DeviceDrainer& operator=(const DeviceDrainer&) = delete;

  /// The next chunk in host memory (page aligned; size 0 at the end), valid until the next call.
  DrainSource::Chunk next();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvikio::detail
