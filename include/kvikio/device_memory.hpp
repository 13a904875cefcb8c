#pragma once
/// @file device_memory.hpp
/// Small helpers for device memory through the run-time CUDA shim, so that tests, the
/// benchmark tool and bindings can allocate and fill device buffers without linking CUDA.
/// All throw CudaDriverError naming the call when the driver is missing or fails.
#include <cstddef>

#include <kvikio/export.hpp>

namespace kvikio {

/// Number of CUDA devices (0 when the driver is not available; never throws).
KVIKIO_EXPORT int device_count() noexcept;

/// True when `ptr` is device memory that the CPU cannot access directly (not host, pinned or
/// managed memory). False without a driver.
KVIKIO_EXPORT bool is_device_memory(const void* ptr);

/// An owning device allocation made with cuMemAlloc (or cuMemAllocManaged when `managed`)
/// in the primary context of `device`. Move-only; the destructor frees it (never throws).
/// Copies are blocking and thread safe for disjoint ranges.
class KVIKIO_EXPORT DeviceBuffer {
 public:
  DeviceBuffer() noexcept = default;
  /// Allocates `nbytes` of device memory on `device` (managed memory when `managed`). Throws
  /// when the CUDA driver is not usable, `device` does not exist or the allocation fails.
  explicit DeviceBuffer(std::size_t nbytes, int device = 0, bool managed = false);
  /// Takes `o`'s memory; `o` is left empty.
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  /// Frees this buffer's memory and takes `o`'s; `o` is left empty.
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&)            = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() noexcept;

  /// The device address (as a pointer).
  [[nodiscard]] void* data() const noexcept { return data_; }
  /// Its size in bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The CUDA device it was allocated on.
  [[nodiscard]] int device() const noexcept { return device_; }

  /// Copies `n` bytes from host `src` to `data() + offset` / from `data() + offset` to host
  /// `dst`, blocking. Throws std::out_of_range when the range exceeds the buffer.
  void copy_from_host(const void* src, std::size_t n, std::size_t offset = 0);
  /// See copy_from_host().
  void copy_to_host(void* dst, std::size_t n, std::size_t offset = 0) const;

 private:
  void* data_{nullptr};
  std::size_t size_{0};
  int device_{0};
};

/// An owning pinned host allocation (cuMemHostAlloc, portable). Move-only.
class KVIKIO_EXPORT PinnedBuffer {
 public:
  PinnedBuffer() noexcept = default;
  /// Allocates `nbytes` of page-locked host memory. Throws when the CUDA driver is not usable
  /// or the allocation fails.
  explicit PinnedBuffer(std::size_t nbytes);
  /// Takes `o`'s memory; `o` is left empty.
  PinnedBuffer(PinnedBuffer&& o) noexcept;
  /// Frees this buffer's memory and takes `o`'s; `o` is left empty.
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&)            = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() noexcept;

  /// The host address.
  [[nodiscard]] void* data() const noexcept { return data_; }
  /// Its size in bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  void* data_{nullptr};
  std::size_t size_{0};
};

}  // namespace kvikio
