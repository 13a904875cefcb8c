#pragma once
// What a buffer pointer is (host, pinned host, managed, device), which allocation it lies in
// and which CUDA context owns it; plus the per-thread, per-context CUDA stream.
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvikio::detail {

enum class MemoryKind : std::uint8_t { HOST, PINNED_HOST, MANAGED, DEVICE };

struct PointerInfo {
  MemoryKind kind{MemoryKind::HOST};
  CUcontext context{nullptr};  // owner of device/pinned/managed memory
  std::uintptr_t base{0};      // start of the allocation (device memory only)
  std::size_t alloc_size{0};   // its size (device memory only)
  /// True when the CPU may read and write the memory directly (host, pinned, managed).
  [[nodiscard]] bool host_accessible() const noexcept { return kind != MemoryKind::DEVICE; }
};

/// Inspects `ptr`. Without a CUDA driver everything is host memory. Throws
/// CudaDriverError when the driver reports an error other than "not CUDA memory".
PointerInfo get_pointer_info(const void* ptr);

/// The address ranges of a process that are plain readable and writable process memory (heap,
/// stacks, anonymous and file mappings), from /proc/self/maps: a buffer inside one of them is
/// host memory that read()/write()/io_uring reach directly, without asking the CUDA driver.
/// Under unified addressing the driver keeps device memory out of such ranges: device
/// addresses are reserved inaccessible (---p) or mapped from its device files (/dev/nvidia*,
/// as are pinned and managed allocations), and both kinds are left out here, as is any other
/// /dev/ or anon_inode: mapping; a buffer outside every range (or across two) is looked up.
class HostMappings {
 public:
  HostMappings() = default;
  /// Parses the text of /proc/<pid>/maps.
  static HostMappings parse(std::string_view maps);
  /// This process's mappings now; empty when /proc/self/maps cannot be read.
  static HostMappings read_self();
  /// True when [ptr, ptr + size) lies inside one range (for size 0: when ptr does).
  [[nodiscard]] bool contains(const void* ptr, std::size_t size) const noexcept
  {
    return find(ptr, size) != nullptr;
  }
  /// The range holding [ptr, ptr + size), or null (a caller may keep it to test the next
  /// buffer against it first).
  [[nodiscard]] const std::pair<std::uintptr_t, std::uintptr_t>* find(
    const void* ptr, std::size_t size) const noexcept;
  /// The ranges [start, end), sorted.
  [[nodiscard]] const std::vector<std::pair<std::uintptr_t, std::uintptr_t>>& ranges()
    const noexcept
  {
    return ranges_;
  }

 private:
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges_;
};

/// The same test as HostMappings, one buffer at a time, through the PROCMAP_QUERY ioctl on
/// /proc/self/maps (Linux 6.11): the kernel answers with the one mapping holding an address,
/// instead of formatting every line of the text (a process using CUDA has hundreds to
/// thousands of them, ~0.35 us each to read). Safe to use from several threads at once.
class MappingQuery {
 public:
  MappingQuery();
  ~MappingQuery();
  MappingQuery(const MappingQuery&)            = delete;
  MappingQuery& operator=(const MappingQuery&) = delete;
  /// False where the kernel has no PROCMAP_QUERY (or /proc is not mounted).
  [[nodiscard]] bool available() const noexcept { return fd_ >= 0; }
  /// The plain read-write mapping holding [ptr, ptr + size), as HostMappings counts them;
  /// {0, 0} when there is none or the answer is in doubt (the buffer is then looked up).
  [[nodiscard]] std::pair<std::uintptr_t, std::uintptr_t> find(const void* ptr,
                                                               std::size_t size) const noexcept;

 private:
  int fd_{-1};
};

/// Throws std::out_of_range naming the pointer, allocation and request when
/// [ptr, ptr + size) is not inside the device allocation described by `info`.
void check_device_range(const PointerInfo& info,
                        const void* ptr,
                        std::size_t size,
                        const std::string& what);

/// What `buf` is (host memory for an empty request, without asking the driver), after
/// check_device_range: the one check of a destination or source buffer (mmap, remote reads
/// and writes, file requests). `what` names the request in the error.
inline PointerInfo check_buffer(const void* buf, std::size_t size, const std::string& what)
{
  const auto info = size > 0 ? get_pointer_info(buf) : PointerInfo{};
  check_device_range(info, buf, size, what);
  return info;
}

/// Makes `ctx` current on this thread for the guard's life (push/pop), so work on a pool
/// thread runs in the buffer's context. A null context is a no-op.
class ContextGuard {
 public:
  explicit ContextGuard(CUcontext ctx);
  ~ContextGuard() noexcept;
  ContextGuard(const ContextGuard&)            = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  bool pushed_{false};
};

/// This thread's stream (blocking: ordered after the legacy default stream) in the current context
/// (created once per thread and context, destroyed when the thread ends). The context must be
/// current.
CUstream thread_stream(CUcontext ctx);

/// Blocks until all work queued in `ctx` before the call, on any stream, has finished: a
/// write from device memory then stores what the caller's kernels and copies produced, also
/// on a non-blocking stream or through a pageable copy whose DMA outlived its call. Once per
/// write request, never per piece. Errors are CudaDriverError naming `what`.
void wait_for_queued_work(CUcontext ctx, const std::string& what);

/// The primary context of device `ordinal`, retained for the life of the process.
CUcontext primary_context(int ordinal);

}  // namespace kvikio::detail
