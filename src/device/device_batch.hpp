#pragma once
// Small device-memory pieces of a batch (kvikio::pread_batch / pwrite_batch) staged in groups
// through one pooled pinned buffer (issue 14). Moved one by one, each small piece costs a
// synchronous driver copy (cuMemcpyHtoD), and a batch of 20000 4 KiB reads was slower than
// 20000 pread().get() calls: the driver's per-call cost, not the disk, set the pace. A group
// instead does all its file transfers into (or out of) consecutive places of one pinned
// buffer, merges pieces whose device ranges are adjacent (the common case: one output array)
// into one copy, queues the copies on this thread's stream and synchronises ONCE per group.
#include <cuda.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <cstdint>
#include <span>

#include "core/posix_io.hpp"

namespace kvikio::detail {

enum class Direction;
class OpenFile;

/// One piece of a device-memory batch request: `size` bytes at `offset` of `file` to or from
/// device memory `buf`, owned by context `ctx`, inside the allocation starting at `alloc`.
/// `index` is the request's index in the batch.
struct DeviceBatchPiece {
  const OpenFile* file;
  CUcontext ctx;
  std::uintptr_t alloc;
  char* buf;
  std::size_t size;
  std::size_t offset;
  std::size_t index;
};

/// Pieces up to this size are grouped; larger ones have enough bytes to take the pipelined
/// path of their own (posix_device_read / posix_device_write) at no loss.
inline constexpr std::size_t device_batch_piece_max = 256 * 1024;

/// Called for a piece that failed, with its request index (a failed merged copy names its
/// first piece). The caller keeps the lowest index.
using DeviceBatchFail = std::function<void(std::size_t index, std::exception_ptr error)>;

/// Moves `pieces` (all in one context; any files) in groups that fit one pooled pinned
/// buffer: the file transfers (as `transfer` says), then per group the copies of runs of pieces
/// adjacent in device memory on this thread's stream and one cuStreamSynchronize. A piece larger
/// than the buffer takes the pipelined path alone. Returns the bytes moved by the pieces that did
/// not fail; never throws: each failure goes to `fail`, and the other pieces still run. Read sizes
/// must be clamped to the file size by the caller (through io_uring a read that meets the end of
/// the file early stops there and counts short, as host requests do).
std::size_t device_batch_io(Direction direction,
                            std::span<const DeviceBatchPiece> pieces,
                            const BatchTransfer& transfer,
                            const DeviceBatchFail& fail) noexcept;

}  // namespace kvikio::detail
