// Device-memory batch pieces staged in groups (see device_batch.hpp for why). Per group: the
// file transfers run first (reads) or last (writes) against consecutive places of one pinned
// buffer; the copies between that buffer and device memory are merged into runs (a run: pieces
// of one allocation, adjacent both in device memory and in the buffer) and queued on this thread's
// stream; one cuStreamSynchronize waits for them all. The buffer goes back to the pool only after
// that synchronisation, even when a copy failed, so no queued copy touches a buffer in other use.
#include "device/device_batch.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "core/open_file.hpp"
#include "core/posix_io.hpp"
#include "core/uring_io.hpp"
#include "device/bounce_buffer.hpp"
#include "device/device_io.hpp"
#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"

namespace kvikio::detail {
namespace {

/// What a piece of the current group is doing: its place in the pinned buffer, the bytes its
/// file transfer moved, and whether it failed (then it is neither copied nor counted).
struct Slot {
  std::size_t place;
  std::size_t done;
  bool failed;
};

std::string group_text(Direction direction,
                       const DeviceBatchPiece& first,
                       std::size_t size,
                       std::size_t count)
{
  std::string text = direction == Direction::read ? "reading into device memory for "
                                                  : "writing from device memory for ";
  text += file_range_text(first.file->path(), first.offset, size);
  if (count > 1) {
    text += " and the " + std::to_string(count - 1) + " batch pieces after it in device memory";
  }
  return text;
}

CUdeviceptr as_dptr(const char* p)
{
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

/// The file side of one group: each piece's transfer between the file and its slot.
void file_transfers(Direction direction,
                    std::span<const DeviceBatchPiece> group,
                    std::vector<Slot>& slots,
                    char* pinned,
                    const BatchTransfer& transfer,
                    const DeviceBatchFail& fail)
{
  if (transfer.uring) {
    std::vector<UringRequest> requests;
    requests.reserve(group.size());
    for (std::size_t k = 0; k < group.size(); ++k) {
      if (slots[k].failed) { continue; }
      const auto& p = group[k];
      const int fd  = transfer.thread_fds && direction == Direction::read
                        ? p.file->read_fd_for_thread()
                        : p.file->fd();
      requests.push_back({fd, pinned + slots[k].place, p.size, p.offset, &p.file->path(), 0, 0});
    }
    uring_io(direction, requests);
    std::size_t r = 0;
    for (std::size_t k = 0; k < group.size(); ++k) {
      if (slots[k].failed) { continue; }
      const auto& req = requests[r++];
      if (req.error != 0) {
        slots[k].failed = true;
        fail(group[k].index, request_error(direction, req));
      } else {
        slots[k].done = req.done;
      }
    }
    return;
  }
  for (std::size_t k = 0; k < group.size(); ++k) {
    if (slots[k].failed) { continue; }
    const auto& p = group[k];
    try {
      slots[k].done = posix_host_io(direction,
                                    *p.file,
                                    pinned + slots[k].place,
                                    p.size,
                                    p.offset,
                                    transfer.direct_io,
                                    transfer.thread_fds);
    } catch (...) {
      slots[k].failed = true;
      fail(p.index, std::current_exception());
    }
  }
}

/// The device side of one group: runs of adjacent pieces copied on `stream`, then one
/// synchronisation. A failed copy fails its run; a failed synchronisation fails the group.
void device_copies(Direction direction,
                   const CudaAPI& api,
                   CUstream stream,
                   std::span<const DeviceBatchPiece> group,
                   std::vector<Slot>& slots,
                   char* pinned,
                   const DeviceBatchFail& fail)
{
  const bool read = direction == Direction::read;
  // Reads copy the bytes the file gave; writes copy whole pieces before the file sees them.
  auto length   = [&](std::size_t k) { return read ? slots[k].done : group[k].size; };
  bool queued   = false;
  std::size_t k = 0;
  while (k < group.size()) {
    if (slots[k].failed || length(k) == 0) {
      ++k;
      continue;
    }
    // The run [k, end): each next piece starts where the one before ended, on both sides,
    // in the same allocation (one copy may not span two, even where they touch: the driver
    // answers CUDA_ERROR_INVALID_VALUE; seen with CuPy's pool on the H200).
    std::size_t end   = k + 1;
    std::size_t bytes = length(k);
    while (end < group.size() && !slots[end].failed && length(end) > 0 &&
           group[end].alloc == group[k].alloc && group[end].buf == group[k].buf + bytes &&
           slots[end].place == slots[k].place + bytes) {
      bytes += length(end);
      ++end;
    }
    const CUresult r =
      read ? api.MemcpyHtoDAsync(as_dptr(group[k].buf), pinned + slots[k].place, bytes, stream)
           : api.MemcpyDtoHAsync(pinned + slots[k].place, as_dptr(group[k].buf), bytes, stream);
    if (r == CUDA_SUCCESS) {
      queued = true;
    } else {
      try {
        cuda_check(r,
                   read ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync",
                   group_text(direction, group[k], bytes, end - k));
      } catch (...) {
        fail(group[k].index, std::current_exception());
      }
      for (std::size_t j = k; j < end; ++j) {
        slots[j].failed = true;
      }
    }
    k = end;
  }
  if (!queued) { return; }
  const CUresult r = api.StreamSynchronize(stream);
  if (r == CUDA_SUCCESS) { return; }
  // Which copy failed is unknown: every piece not failed yet fails, the first one reported.
  std::size_t first = group.size();
  std::size_t total = 0;
  for (std::size_t j = 0; j < group.size(); ++j) {
    if (slots[j].failed) { continue; }
    if (first == group.size()) { first = j; }
    total += group[j].size;
    slots[j].failed = true;
  }
  if (first == group.size()) { return; }
  try {
    cuda_check(
      r, "cuStreamSynchronize", group_text(direction, group[first], total, group.size() - first));
  } catch (...) {
    fail(group[first].index, std::current_exception());
  }
}

/// A piece too large for the pinned buffer, on the pipelined path of its own.
std::size_t alone(Direction direction, const DeviceBatchPiece& p, bool direct_io)
{
  return direction == Direction::read
           ? posix_device_read(*p.file, p.ctx, p.buf, p.size, p.offset, direct_io)
           : posix_device_write(*p.file, p.ctx, p.buf, p.size, p.offset, direct_io);
}

}  // namespace

std::size_t device_batch_io(Direction direction,
                            std::span<const DeviceBatchPiece> pieces,
                            const BatchTransfer& transfer,
                            const DeviceBatchFail& fail) noexcept
{
  std::size_t moved = 0;
  std::size_t pos   = 0;  // pieces before it are done (moved or reported)
  try {
    if (pieces.empty()) { return 0; }
    const auto& api =
      *cuda_api_or_throw(group_text(direction, pieces.front(), pieces.front().size, 1));
    ContextGuard guard(pieces.front().ctx);
    const CUstream stream = thread_stream(pieces.front().ctx);
    BounceBuffer bounce;  // after the guard: back to the pool before the context is popped
    std::vector<Slot> slots;
    while (pos < pieces.size()) {
      if (pieces[pos].size > bounce.size()) {
        try {
          moved += alone(direction, pieces[pos], transfer.direct_io);
        } catch (...) {
          fail(pieces[pos].index, std::current_exception());
        }
        ++pos;
        continue;
      }
      // The group: as many pieces as fit the pinned buffer, each at the next free place.
      std::size_t end  = pos;
      std::size_t fill = 0;
      slots.clear();
      while (end < pieces.size() && pieces[end].size <= bounce.size() - fill) {
        slots.push_back({fill, 0, false});
        fill += pieces[end].size;
        ++end;
      }
      const auto group = pieces.subspan(pos, end - pos);
      if (direction == Direction::read) {
        file_transfers(direction, group, slots, bounce.data(), transfer, fail);
        device_copies(direction, api, stream, group, slots, bounce.data(), fail);
      } else {
        device_copies(direction, api, stream, group, slots, bounce.data(), fail);
        file_transfers(direction, group, slots, bounce.data(), transfer, fail);
      }
      for (std::size_t k = 0; k < group.size(); ++k) {
        if (!slots[k].failed) { moved += slots[k].done; }
      }
      pos = end;
    }
  } catch (...) {
    // Before any copy of the current group was queued (the driver, the context, the stream or
    // a pinned buffer could not be had): the pieces not yet run fail, the first one reported.
    if (pos < pieces.size()) { fail(pieces[pos].index, std::current_exception()); }
  }
  return moved;
}

}  // namespace kvikio::detail
