#pragma once
// How a batch of file requests (kvikio::pread_batch and friends) is laid out, apart from
// running it (api/batch_io.cpp): the shapes of its parts, the policies that size them
// (issue 14's measurements), and the pure functions that plan slices, groups and jobs.
// Nothing here touches a pool, a file or the GPU.
#include <cuda.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/open_file.hpp"
#include "device/pointer.hpp"

namespace kvikio::detail {

struct OpenHandle;

/// A request that is not one plain host piece: device memory, or larger than task_size.
struct BatchItem {
  std::size_t index;   // in the batch
  OpenHandle* handle;  // kept alive by the batch
  PointerInfo info;
  char* buf;
  std::size_t size;  // clamped to the end of the file for reads
  std::size_t offset;
};

/// A part of *item run on the pool: `size` bytes from `buf_offset` into the request.
struct BatchPiece {
  const BatchItem* item;
  std::size_t buf_offset;
  std::size_t size;
};

/// pieces[begin, end), one job's share: a group staged through one pinned buffer
/// (device_batch_io), or one piece alone through route().
struct PoolGroup {
  std::size_t begin;
  std::size_t end;
  bool staged;
};

/// What plan_pool_groups needs of a piece.
struct PieceShape {
  std::size_t size;
  CUcontext context;
  bool stageable;  // small, and of a file without cuFile (the POSIX path)
};

/// The sizes a batch is laid out by (measured for issue 14; the reasons are in batch_io.cpp).
struct BatchPolicy {
  /// Requests are checked in blocks of this many.
  static constexpr std::size_t check_block = 256;
  /// From this many requests the pool's threads help with the checks.
  static constexpr std::size_t parallel_checks_from = 4 * check_block;
  /// From this many requests the whole list of mappings is read where the kernel cannot be
  /// asked for one buffer's (~0.35 us a line against ~0.7 us a driver query per buffer).
  static constexpr std::size_t mappings_from = 512;
  /// From this many requests per file (on average) reads go through each thread's own
  /// descriptor of the file (OpenFile::read_fd_for_thread).
  static constexpr std::size_t thread_fds_from = 256;
  /// The smallest staged group of device pieces: 16 pieces of 4 KiB.
  static constexpr std::size_t min_group = 64 * 1024;
  /// The smallest slice of host entries: a pass through a ring (a few system calls for deep
  /// queues), or a short run of plain calls.
  static constexpr std::size_t min_slice(bool uring) noexcept { return uring ? 8 : 2; }
};

/// The next slice of host entries at `pos` of `total` (the first `count` are the requests'
/// own, the rest the pieces of large ones; no slice straddles the two): about 1/(2 x threads)
/// of what is left, at least min_slice, so that the threads finish together. 0 when none.
constexpr std::size_t slice_length(std::size_t pos,
                                   std::size_t total,
                                   std::size_t count,
                                   std::size_t min_slice,
                                   std::size_t threads) noexcept
{
  if (pos >= total) { return 0; }
  const std::size_t left = total - pos;
  std::size_t want       = std::min(left, std::max(min_slice, left / (2 * threads)));
  if (pos < count) { want = std::min(want, count - pos); }
  return want;
}

/// Whether reads go through each thread's own descriptor: where many requests share few
/// files (their descriptors are opened once per thread and file and kept with the file, so
/// not for a batch of a request or two per file, a zarr array's chunks).
constexpr bool use_thread_fds(Direction direction,
                              bool direct_io,
                              std::size_t threads,
                              std::size_t requests,
                              std::size_t files) noexcept
{
  return direction == Direction::read && !direct_io && threads > 1 &&
         requests >= BatchPolicy::thread_fds_from * files;
}

/// The jobs a batch needs: enough for its slices and its pool groups, at most one a thread.
constexpr std::size_t jobs_needed(std::size_t threads,
                                  std::size_t host_requests,
                                  std::size_t min_slice,
                                  std::size_t pool_groups) noexcept
{
  return std::min(threads, std::max((host_requests + min_slice - 1) / min_slice, pool_groups));
}

/// Splits pieces [0, shapes.size()) into groups. Stageable pieces are staged in groups of
/// one context, sized to give each of the threads a few groups (as the host slices are) but
/// never more than a pinned buffer (`buffer_size`) holds: one synchronisation per group
/// instead of one copy call per piece. The rest (cuFile, large pieces) run one by one.
std::vector<PoolGroup> plan_pool_groups(const std::vector<PieceShape>& shapes,
                                        std::size_t threads,
                                        std::size_t buffer_size);

/// This process's PROCMAP_QUERY descriptor on its own /proc/<pid>/maps, opened on first use
/// and again in a forked child (which would otherwise ask about its parent's address space:
/// reliability audit F9); null where the kernel cannot answer.
const MappingQuery* this_process_mapping_query();

}  // namespace kvikio::detail
