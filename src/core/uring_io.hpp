#pragma once
// Many host-memory reads or writes submitted through io_uring (liburing, linked statically
// when the build found it): a few system calls for a whole batch instead of one per request.
#include <cstddef>
#include <exception>
#include <span>
#include <string>

namespace kvikio::detail {

enum class Direction;

/// One request of a batch, as io_uring sees it. `done` and `error` are the results. A plain
/// aggregate (no initialisers): a batch fills many thousands of them in parallel, and a
/// request of size 0 is skipped.
struct UringRequest {
  int fd;
  char* buf;
  std::size_t size;
  std::size_t offset;
  const std::string* path;  // for messages
  std::size_t done;         // set to 0 by whoever fills the request
  int error;                // the errno of a failed transfer, 0 if none: see request_error
};

/// The exception of a request whose `error` is set, naming the file range.
[[nodiscard]] std::exception_ptr request_error(Direction direction, const UringRequest& r);

/// True when io_uring works here: the build has liburing and the kernel lets this process
/// set up a ring and complete a no-op (containers often forbid io_uring_setup). Probed once.
[[nodiscard]] bool uring_available() noexcept;
/// Why io_uring is not available ("" when it is).
[[nodiscard]] const std::string& uring_unavailable_reason() noexcept;

/// Runs every request on this thread's ring (one per thread, created on first use), a
/// queue-full at a time, resubmitting the rest of short transfers. A read that reaches the
/// end of the file stops there (`done` < `size`); an OS error's errno is stored in `error` and the
/// other requests still run. Never throws; without a usable ring the requests run through
/// pread(2)/pwrite(2) instead.
void uring_io(Direction direction, std::span<UringRequest> requests) noexcept;

}  // namespace kvikio::detail
