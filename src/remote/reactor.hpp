#pragma once
// The MULTI_POLL backend of remote reads: reactor threads, each owning a libcurl multi handle
// that drives many range transfers at once (curl_multi_poll), capped by
// remote_io_max_concurrent_requests.
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include <kvikio/remote_handle.hpp>

#include "remote/transfer.hpp"

namespace kvikio::detail {

/// One range to fetch on a reactor. `done` is called exactly once, on the reactor thread, when
/// the range is complete (nullptr) or failed for good (its error: the same one fetch_range
/// would throw); it must not throw. `sink` also runs on the reactor thread.
struct RangeJob {
  std::shared_ptr<RemoteEndpoint> endpoint;
  std::size_t file_offset;
  std::size_t size;  // > 0
  Sink sink;
  std::function<void(std::exception_ptr)> done;
};

/// Hands `jobs` (one call's ranges) to the reactors per remote_io_reactor_dispatch and
/// remote_io_num_reactors, starting the reactor threads on first use. Non-blocking. Jobs that
/// cannot be handed over (thread creation failed) are completed with that error at once.
void submit_to_reactors(std::vector<RangeJob> jobs);

}  // namespace kvikio::detail
