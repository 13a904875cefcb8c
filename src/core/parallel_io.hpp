#pragma once
// Running the pieces of a request on the shared pool, gathered into one future.
#include <atomic>
#include <cstddef>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <utility>

#include <kvikio/defaults.hpp>

#include "core/task_split.hpp"

namespace kvikio::detail {

/// Runs `op(TaskRange)` (returning the bytes it moved, throwing on failure) for every piece of
/// the request on the shared pool. The future is ready once every piece finished: it holds
/// the sum of the bytes, or the first exception any piece threw. Never blocks the caller.
template <typename Op>
std::future<std::size_t> parallel_io(Op op,
                                     std::size_t size,
                                     std::size_t file_offset,
                                     std::size_t task_size)
{
  auto tasks = split_into_tasks(size, file_offset, task_size);
  if (tasks.empty()) {
    std::promise<std::size_t> done;
    done.set_value(0);
    return done.get_future();
  }
  // The last piece to finish fulfils the promise, so the future is a real one: wait_for()
  // answers truthfully and no thread of the pool blocks waiting on its siblings.
  struct Gather {
    std::promise<std::size_t> promise;
    std::atomic<std::size_t> remaining;
    std::atomic<std::size_t> bytes{0};
    std::mutex error_mutex;
    std::exception_ptr first_error;
    explicit Gather(std::size_t n) : remaining(n) {}
  };
  auto gather = std::make_shared<Gather>(tasks.size());
  auto future = gather->promise.get_future();
  auto& pool  = defaults::thread_pool();
  for (const auto& task : tasks) {
    pool.detach_task([gather, op, task]() noexcept {
      try {
        gather->bytes += op(task);
      } catch (...) {
        std::lock_guard lock(gather->error_mutex);
        if (!gather->first_error) { gather->first_error = std::current_exception(); }
      }
      if (gather->remaining.fetch_sub(1) == 1) {
        if (gather->first_error) {
          gather->promise.set_exception(gather->first_error);
        } else {
          gather->promise.set_value(gather->bytes.load());
        }
      }
    });
  }
  return future;
}

/// A future that is already ready with `value`.
inline std::future<std::size_t> ready_future(std::size_t value)
{
  std::promise<std::size_t> p;
  p.set_value(value);
  return p.get_future();
}

}  // namespace kvikio::detail
