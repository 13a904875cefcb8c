#pragma once
// Which range requests a remote batch sends (RemoteHandle::pread_batch, and pread on
// MULTI_POLL): its requests cut into task_size pieces, near host pieces joined into one range,
// and how a range's bytes are scattered into the requests' buffers as they arrive. Pure: no
// endpoint, pool or server; running the ranges is remote_handle.cpp's.
#include <cstddef>
#include <vector>

#include "device/pointer.hpp"

namespace kvikio::detail {

/// Where a part of a range request's bytes go: request `index`'s buffer at `dst`, which
/// receives the object's bytes [file_offset, file_offset + size).
struct RangeTarget {
  std::size_t index;
  char* dst;
  std::size_t file_offset;
  std::size_t size;
};

/// One range request of a batch: [file_offset, file_offset + size) scattered into `targets`
/// (host memory; sorted by file_offset), or, for device memory, read into one target.
struct RangeGroup {
  std::size_t first_index;  // the lowest request index among the targets (for errors)
  std::size_t file_offset;
  std::size_t size;
  std::vector<RangeTarget> targets;
  bool device{false};
  PointerInfo info{};  // device groups only
};

/// The ranges of a batch, planned as its requests are added.
class RangePlan {
 public:
  /// `task_size`: the most one range covers (so that http_timeout bounds one request as it
  /// bounds pread's pieces); `gap`: the most bytes between two host pieces that one range
  /// still joins (they are fetched and dropped).
  RangePlan(std::size_t task_size, std::size_t gap);

  /// Request `index`: `size` bytes at `file_offset` into `buf`, described by `info` (checked
  /// already), cut into task_size pieces. A device piece is its own range.
  void add(std::size_t index,
           char* buf,
           std::size_t size,
           std::size_t file_offset,
           const PointerInfo& info);

  /// The ranges: the device pieces in request order, then the host pieces joined: sorted by
  /// offset, each joins the current range when the gap before it is at most `gap` and the
  /// range stays within task_size. Once only.
  std::vector<RangeGroup> finish();

  /// Bytes of every request added.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  std::size_t task_size_;
  std::size_t gap_;
  std::size_t bytes_{0};
  std::vector<RangeTarget> host_;
  std::vector<RangeGroup> groups_;
};

/// Copies a range's bytes, as they arrive in order, into the parts of every target they
/// cover (targets may overlap each other, and gaps between them are dropped). A detail::Sink.
struct RangeScatter {
  const RangeGroup* group;
  std::size_t pos{0};    // bytes of the range seen so far
  std::size_t first{0};  // targets before this one are complete

  void operator()(const char* data, std::size_t n);
};

}  // namespace kvikio::detail
