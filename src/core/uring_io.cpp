// io_uring batches (see uring_io.hpp). Without liburing at build time every request takes the
// plain pread(2)/pwrite(2) loop and uring_available() says why.
#include "core/uring_io.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <kvikio/error.hpp>

#include "core/format.hpp"
#include "core/open_file.hpp"
#include "core/posix_io.hpp"

#ifdef KVIKIO_HAVE_LIBURING
#include <liburing.h>
#endif

namespace kvikio::detail {
namespace {

/// The fallback: one system call (or more for short transfers) per request.
void plain_io(Direction direction, UringRequest& r) noexcept
{
  while (r.done < r.size) {
    const auto off  = static_cast<off_t>(r.offset + r.done);
    const ssize_t n = direction == Direction::read
                        ? ::pread(r.fd, r.buf + r.done, r.size - r.done, off)
                        : ::pwrite(r.fd, r.buf + r.done, r.size - r.done, off);
    if (n < 0) {
      if (errno == EINTR) { continue; }
      r.error = errno;
      return;
    }
    if (n == 0) {
      // A write that stores nothing would loop forever: report it as a full device would.
      if (direction == Direction::write) { r.error = EIO; }
      return;  // a read at the end of the file: a short count
    }
    r.done += static_cast<std::size_t>(n);
  }
}

#ifdef KVIKIO_HAVE_LIBURING
constexpr unsigned ring_entries = 64;

struct Probe {
  bool ok{false};
  std::string reason;
  Probe()
  {
    io_uring ring{};
    if (int rc = io_uring_queue_init(2, &ring, 0); rc < 0) {
      reason = std::string("io_uring_queue_init failed: ") + std::strerror(-rc);
      return;
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_nop(sqe);
    io_uring_cqe* cqe = nullptr;
    int rc            = io_uring_submit_and_wait(&ring, 1);
    if (rc >= 0) { rc = io_uring_wait_cqe(&ring, &cqe); }
    if (rc < 0) {
      reason = std::string("io_uring no-op failed: ") + std::strerror(-rc);
    } else {
      ok = cqe->res == 0;
      if (!ok) { reason = std::string("io_uring no-op failed: ") + std::strerror(-cqe->res); }
      io_uring_cqe_seen(&ring, cqe);
    }
    io_uring_queue_exit(&ring);
  }
};

const Probe& probe()
{
  static const Probe p;
  return p;
}

/// This thread's ring, set up on first use; `ok` false when that failed (RLIMIT_MEMLOCK).
struct ThreadRing {
  io_uring ring{};
  bool ok{false};
  ThreadRing()
  {
    // Only this thread submits to its ring and reaps it, so completions may wait for its next
    // io_uring_enter instead of interrupting it (Linux 6.1; 5.19 for COOP_TASKRUN alone);
    // older kernels refuse the flags, and the ring is set up without them.
    for (unsigned flags : {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
                           unsigned{IORING_SETUP_COOP_TASKRUN},
                           0U}) {
      if (io_uring_queue_init(ring_entries, &ring, flags) == 0) {
        ok = true;
        return;
      }
    }
  }
  ~ThreadRing()
  {
    if (ok) { io_uring_queue_exit(&ring); }
  }
  ThreadRing(const ThreadRing&)            = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;
};

void prep(io_uring_sqe* sqe, Direction direction, UringRequest& r, std::size_t index)
{
  const auto off = static_cast<__u64>(r.offset + r.done);
  // One SQE moves at most 2 GiB - 4 KiB (the kernel's MAX_RW_COUNT); the rest is resubmitted.
  const auto size = static_cast<unsigned>(std::min<std::size_t>(r.size - r.done, 0x7ffff000));
  if (direction == Direction::read) {
    io_uring_prep_read(sqe, r.fd, r.buf + r.done, size, off);
  } else {
    io_uring_prep_write(sqe, r.fd, r.buf + r.done, size, off);
  }
  io_uring_sqe_set_data64(sqe, index);
}

/// Reads what the page cache holds of `requests` on this thread (preadv2 with RWF_NOWAIT: the
/// kernel refuses rather than waits for the disk); the rest stays for the ring. A cached read
/// costs one system call either way, and the ring's own path costs more per request than a
/// plain read (H200, 4 KiB hot reads on 16 threads: io_uring 0.83x, plain calls 0.92x of a
/// pread loop; issue 14). Uncached reads pay one refused call each, little beside the disk.
void read_cached(std::span<UringRequest> requests) noexcept
{
  for (auto& r : requests) {
    if (r.done >= r.size) { continue; }
    const ssize_t n = read_if_cached(r.fd, r.buf + r.done, r.size - r.done, r.offset + r.done);
    if (n > 0) {
      r.done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return;  // no RWF_NOWAIT here (old kernel, file system): the ring takes every request
    }
  }
}

void ring_io(io_uring& ring, Direction direction, std::span<UringRequest> requests) noexcept
{
  if (direction == Direction::read) { read_cached(requests); }
  std::vector<std::size_t> pending;  // requests (indices) to (re)submit, consumed from the back
  pending.reserve(requests.size());
  for (std::size_t i = requests.size(); i-- > 0;) {
    if (requests[i].done < requests[i].size) { pending.push_back(i); }
  }
  std::size_t inflight = 0;
  while (!pending.empty() || inflight > 0) {
    while (!pending.empty() && inflight < ring_entries) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      if (sqe == nullptr) { break; }
      prep(sqe, direction, requests[pending.back()], pending.back());
      pending.pop_back();
      ++inflight;
    }
    int rc = io_uring_submit_and_wait(&ring, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      // The ring itself failed: what was submitted still completes (waited for below), what
      // was not runs through the plain calls.
      for (auto i : pending) {
        plain_io(direction, requests[i]);
      }
      pending.clear();
    }
    io_uring_cqe* cqe = nullptr;
    unsigned seen     = 0;
    unsigned head     = 0;
    io_uring_for_each_cqe(&ring, head, cqe)
    {
      ++seen;
      --inflight;
      auto& r       = requests[static_cast<std::size_t>(io_uring_cqe_get_data64(cqe))];
      const int res = cqe->res;
      if (res == -EINTR || res == -EAGAIN) {
        pending.push_back(static_cast<std::size_t>(io_uring_cqe_get_data64(cqe)));
      } else if (res < 0) {
        r.error = -res;
      } else if (res == 0) {
        if (direction == Direction::write) { r.error = EIO; }
        // a read at the end of the file: a short count
      } else {
        r.done += static_cast<std::size_t>(res);
        if (r.done < r.size) {
          pending.push_back(static_cast<std::size_t>(io_uring_cqe_get_data64(cqe)));
        }
      }
    }
    io_uring_cq_advance(&ring, seen);
    if (rc < 0 && seen == 0 && inflight > 0) {
      // Nothing reaped after a failed submit: wait for the submitted ones before retrying.
      if (io_uring_wait_cqe(&ring, &cqe) < 0) { continue; }
    }
  }
}
#endif

}  // namespace

std::exception_ptr request_error(Direction direction, const UringRequest& r)
{
  const char* op = direction == Direction::read ? "read of " : "write of ";
  return std::make_exception_ptr(GenericSystemError(
    r.error, std::string(op) + file_range_text(*r.path, r.offset, r.size) + " failed"));
}

bool uring_available() noexcept
{
#ifdef KVIKIO_HAVE_LIBURING
  return probe().ok;
#else
  return false;
#endif
}

const std::string& uring_unavailable_reason() noexcept
{
#ifdef KVIKIO_HAVE_LIBURING
  return probe().reason;
#else
  static const std::string reason = "this build has no liburing";
  return reason;
#endif
}

void uring_io(Direction direction, std::span<UringRequest> requests) noexcept
{
#ifdef KVIKIO_HAVE_LIBURING
  if (uring_available()) {
    thread_local ThreadRing ring;
    if (ring.ok) {
      ring_io(ring.ring, direction, requests);
      return;
    }
  }
#endif
  for (auto& r : requests) {
    plain_io(direction, r);
  }
}

}  // namespace kvikio::detail
