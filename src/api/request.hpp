#pragma once
// The one check of a file request and the one router of its pieces, for every entry point
// that reads or writes a FileHandle (read/write, pread/pwrite, batches, BatchHandle): each
// error about a request is worded here once.
#include <sys/types.h>

#include <cstddef>
#include <future>
#include <limits>
#include <memory>
#include <string>

#include <kvikio/file_handle.hpp>

#include "api/open_handle.hpp"
#include "core/open_file.hpp"
#include "device/pointer.hpp"

namespace kvikio::detail {

/// The shared state of `f` (what its queued work holds); null when `f` is closed.
const std::shared_ptr<OpenHandle>& open_state(const FileHandle& f) noexcept;

/// std::invalid_argument: IO on the closed file `path`.
[[noreturn]] void throw_closed(const std::string& path);

/// std::overflow_error naming the values: [file_offset, file_offset + size) of `path` does
/// not fit in off_t.
[[noreturn]] void throw_file_range(const std::string& path,
                                   std::size_t size,
                                   std::size_t file_offset);

/// Rejects ranges whose end does not fit in off_t (throw_file_range).
inline void check_file_range(const std::string& path, std::size_t size, std::size_t file_offset)
{
  constexpr auto max_off = static_cast<std::size_t>(std::numeric_limits<off_t>::max());
  if (file_offset > max_off || size > max_off - file_offset) {
    throw_file_range(path, size, file_offset);
  }
}

/// "<op> of '<path>' at file offset <offset>": where a request's buffer error happened.
std::string describe(const char* op, const std::string& path, std::size_t file_offset);

class AppendReservation;

/// A request that passed the checks every read and write makes before any IO.
struct CheckedRequest {
  char* buf;
  std::size_t file_offset;
  PointerInfo info;                           // of `buf`; left empty for an empty request
  std::shared_ptr<AppendReservation> append;  // set for an append (request.cpp)
};

/// The file is open for `direction`; a write at unspecified_offset goes to the end of a file
/// opened for appending (else to 0); the range fits in off_t; a device buffer holds it all.
/// An append reserves its range until the request and every piece of it let go, and gives it
/// back if it failed (reliability audit F6); `owner` keeps `file` alive for that long (null
/// where the caller does). A write from device or managed memory first waits for the work
/// queued in its context (wait_for_queued_work, issue 28).
CheckedRequest check_request(Direction direction,
                             const char* op,
                             const OpenFile& file,
                             const void* buf,
                             std::size_t size,
                             std::size_t file_offset,
                             std::shared_ptr<const void> owner = nullptr);

/// How route() may move a piece of device memory.
struct RouteOptions {
  bool sync_default_stream{false};  // cuFile: synchronise the legacy default stream first
  bool force_posix{false};          // the POSIX path even where the file uses cuFile
};

/// Moves one piece, blocking, on this thread: host-accessible memory straight through POSIX,
/// device memory through cuFile when the file registered with it, else through the bounce
/// buffer pipeline. `info` describes the whole buffer. A write never stores through `buf`.
std::size_t route(Direction direction,
                  const OpenHandle& handle,
                  const PointerInfo& info,
                  char* buf,
                  std::size_t size,
                  std::size_t file_offset,
                  RouteOptions options = {});

/// A whole request, checked and moved on this thread (FileHandle::read/write, BatchHandle's
/// POSIX fallback). A small read that the page cache holds is served before the buffer is
/// inspected.
std::size_t io_now(Direction direction,
                   const char* op,
                   const OpenHandle& handle,
                   const void* buf,
                   std::size_t size,
                   std::size_t file_offset,
                   bool sync_default_stream = false);

/// A whole request, checked on this thread and split into task_size pieces on the pool
/// (FileHandle::pread/pwrite); the future gives the bytes or the first piece's error.
std::future<std::size_t> io_parallel(Direction direction,
                                     const char* op,
                                     const std::shared_ptr<OpenHandle>& handle,
                                     const void* buf,
                                     std::size_t size,
                                     std::size_t file_offset,
                                     std::size_t task_size,
                                     std::size_t gds_threshold,
                                     bool sync_default_stream,
                                     ThreadPool* thread_pool);

}  // namespace kvikio::detail
