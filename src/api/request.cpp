// The one check of a file request and the one router of its pieces (api/request.hpp).
#include "api/request.hpp"

#include <atomic>
#include <stdexcept>

#include <kvikio/defaults.hpp>

#include "core/parallel_io.hpp"
#include "core/posix_io.hpp"
#include "device/device_io.hpp"
#include "gds/cufile_io.hpp"
#include "shim/cuda_api.hpp"

namespace kvikio::detail {

const std::shared_ptr<OpenHandle>& open_state(const FileHandle& f) noexcept { return f.file_; }

void throw_closed(const std::string& path)
{
  throw std::invalid_argument("IO on closed file '" + path + "'");
}

void throw_file_range(const std::string& path, std::size_t size, std::size_t file_offset)
{
  throw std::overflow_error("file offset " + std::to_string(file_offset) + " plus size " +
                            std::to_string(size) + " overflows the largest file offset for '" +
                            path + "'");
}

std::string describe(const char* op, const std::string& path, std::size_t file_offset)
{
  return std::string(op) + " of '" + path + "' at file offset " + std::to_string(file_offset);
}

/// An append's range, reserved when its request is checked and ended when the request and
/// every task of it let it go: until then the file counts the append as in flight, and a
/// failed one gives its range back (OpenFile::reserve_append, reliability audit F6).
class AppendReservation {
 public:
  /// `owner` keeps `file` alive (null where the caller does, for as long as the reservation).
  AppendReservation(const OpenFile& file, std::shared_ptr<const void> owner, std::size_t size)
    : file_(file), owner_(std::move(owner)), size_(size), start_(file.reserve_append(size))
  {
  }
  AppendReservation(const AppendReservation&)            = delete;
  AppendReservation& operator=(const AppendReservation&) = delete;
  ~AppendReservation() { file_.end_append(start_, size_, failed_.load(std::memory_order_relaxed)); }
  [[nodiscard]] std::size_t start() const noexcept { return start_; }
  void fail() noexcept { failed_.store(true, std::memory_order_relaxed); }

 private:
  const OpenFile& file_;
  std::shared_ptr<const void> owner_;
  std::size_t size_;
  std::size_t start_;
  std::atomic<bool> failed_{false};
};

namespace {

/// `io()`: the checks or the IO of request `r`, or of a piece of it. An append whose IO throws
/// is marked failed, so that its range is given back when nothing was reserved after it.
template <typename IO>
auto run_request(const CheckedRequest& r, IO&& io) -> decltype(io())
{
  try {
    return io();
  } catch (...) {
    if (r.append) { r.append->fail(); }
    throw;
  }
}

}  // namespace

CheckedRequest check_request(Direction direction,
                             const char* op,
                             const OpenFile& file,
                             const void* buf,
                             std::size_t size,
                             std::size_t file_offset,
                             std::shared_ptr<const void> owner)
{
  file.require(direction);
  std::shared_ptr<AppendReservation> append;
  if (direction == Direction::write && file_offset == unspecified_offset) {
    // Appends reserve their range atomically: two requests issued before either ran must not
    // both take the current size as their offset (reliability audit #2).
    if (file.append()) {
      check_file_range(file.path(), size, 0);
      append = std::make_shared<AppendReservation>(file, std::move(owner), size);
    }
    file_offset = append ? append->start() : 0;
  }
  CheckedRequest r{
    const_cast<char*>(static_cast<const char*>(buf)), file_offset, {}, std::move(append)};
  run_request(r, [&] {  // a refused append gives its range back
    check_file_range(file.path(), size, file_offset);
    r.info = check_buffer(r.buf, size, describe(op, file.path(), file_offset));
    if (direction == Direction::write &&
        (r.info.kind == MemoryKind::DEVICE || r.info.kind == MemoryKind::MANAGED)) {
      // What the caller queued before the call, on any stream, is what gets written.
      wait_for_queued_work(r.info.context, describe(op, file.path(), file_offset));
    }
    return std::size_t{0};
  });
  return r;
}

std::size_t route(Direction direction,
                  const OpenHandle& handle,
                  const PointerInfo& info,
                  char* buf,
                  std::size_t size,
                  std::size_t file_offset,
                  RouteOptions options)
{
  const auto& file     = handle.file;
  const bool write     = direction == Direction::write;
  const bool direct_io = write ? defaults::auto_direct_io_write() : defaults::auto_direct_io_read();
  if (info.host_accessible()) {
    return posix_host_io(direction, file, buf, size, file_offset, direct_io);
  }
  if (handle.cufile && !options.force_posix) {
    const auto* base = reinterpret_cast<const char*>(info.base);
    return cufile_io(direction,
                     file,
                     handle.cufile,
                     info.context,
                     base,
                     size,
                     file_offset,
                     static_cast<std::size_t>(buf - base),
                     options.sync_default_stream);
  }
  return write ? posix_device_write(file, info.context, buf, size, file_offset, direct_io)
               : posix_device_read(file, info.context, buf, size, file_offset, direct_io);
}

namespace {

// Small host reads whose bytes are all in the page cache run on the calling thread: a copy
// of a few pages costs a microsecond or two, a hand-off to the pool and back tens (issue 14).
// Larger ones stay on the pool, where the caller may overlap them with other work.
constexpr std::size_t inline_read_max = 128 * 1024;

/// A small read done on this thread if the page cache holds all of it (read_if_cached),
/// after the read's own checks (open for reading, range within off_t); true when it is done.
/// False means nothing usable was read (not cached, a short read, Direct IO wanted, an old
/// kernel or file system): the request then takes its usual path, which reads it again in full.
///
/// It runs before the driver is asked what `buf` is: that query costs about as much as the
/// read itself (~0.7 us under the driver's lock on an H200) and most small reads go to host
/// memory. Device memory is never mapped for the CPU (its addresses are reserved
/// inaccessible), so the kernel refuses to copy there (EFAULT) and the request goes on to the
/// device path; pinned and managed memory take the host path in any case.
bool cached_read_now(const OpenFile& file, void* buf, std::size_t size, std::size_t file_offset)
{
  if (size == 0 || size > inline_read_max) { return false; }
  file.require(Direction::read);
  check_file_range(file.path(), size, file_offset);
  if (defaults::auto_direct_io_read() && file.fd_direct() >= 0) { return false; }
  const ssize_t n = read_if_cached(file.small_read_fd(), buf, size, file_offset);
  return n >= 0 && static_cast<std::size_t>(n) == size;
}

}  // namespace

std::size_t io_now(Direction direction,
                   const char* op,
                   const OpenHandle& handle,
                   const void* buf,
                   std::size_t size,
                   std::size_t file_offset,
                   bool sync_default_stream)
{
  if (direction == Direction::read &&
      cached_read_now(handle.file, const_cast<void*>(buf), size, file_offset)) {
    return size;
  }
  auto r = check_request(direction, op, handle.file, buf, size, file_offset);
  if (size == 0) { return 0; }
  return run_request(r, [&] {
    return route(direction, handle, r.info, r.buf, size, r.file_offset, {sync_default_stream});
  });
}

std::future<std::size_t> io_parallel(Direction direction,
                                     const char* op,
                                     const std::shared_ptr<OpenHandle>& handle,
                                     const void* buf,
                                     std::size_t size,
                                     std::size_t file_offset,
                                     std::size_t task_size,
                                     std::size_t gds_threshold,
                                     bool sync_default_stream,
                                     ThreadPool* thread_pool)
{
  if (task_size == 0) { throw std::invalid_argument("task_size must be positive"); }
  if (direction == Direction::read && size <= task_size &&
      cached_read_now(handle->file, const_cast<void*>(buf), size, file_offset)) {
    return ready_future(size);
  }
  auto r            = check_request(direction, op, handle->file, buf, size, file_offset, handle);
  const bool device = !r.info.host_accessible();
  if (device && size < gds_threshold) {
    // Small device requests are not worth the pool or cuFile: POSIX, on this thread.
    return ready_future(run_request(r, [&] {
      return route(direction, *handle, r.info, r.buf, size, r.file_offset, {false, true});
    }));
  }
  if (device && handle->cufile && sync_default_stream) {
    ContextGuard guard(r.info.context);
    cuda_check(CudaAPI::instance().StreamSynchronize(nullptr), "cuStreamSynchronize(0)");
  }
  // The lambda holds the append's reservation (which holds the handle): its tasks let it go
  // before the future is ready (parallel_io), so the append has ended when get() returns.
  return run_request(r, [&] {  // nothing queued: the append gives its range back
    return parallel_io(
      [handle, direction, r](const TaskRange& t) {
        return run_request(r, [&] {
          return route(direction, *handle, r.info, r.buf + t.buf_offset, t.size, t.file_offset);
        });
      },
      size,
      r.file_offset,
      task_size,
      // The file's per-device pool serves it, unless the caller chose another pool.
      handle->pool != nullptr && (thread_pool == nullptr || thread_pool == &defaults::thread_pool())
        ? handle->pool
        : thread_pool);
  });
}

}  // namespace kvikio::detail
