#pragma once
// Running the pieces of a request on the shared pool, gathered into one future.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/nvtx.hpp>

#include "core/task_split.hpp"

namespace kvikio::detail {

/// Test hook: when >= 0, queueing the job with this index throws std::bad_alloc, as a full
/// heap would (reliability audit #17). Never set outside tests.
inline std::atomic<int> fail_enqueue_at_for_testing{-1};

/// Runs `op(TaskRange)` (returning the bytes it moved, throwing on failure) for every piece of
/// the request on the shared pool. The future is ready once every piece finished: it holds
/// the sum of the bytes, or the first exception any piece threw. Never blocks the caller.
///
/// At most one job per pool thread is queued, and the jobs take the pieces in order from a
/// shared counter, so memory does not grow with size / task_size (reliability audit #10).
/// A task_size below one page is raised to one page: smaller pieces cost a system call (or an
/// HTTP request) per few bytes and gain nothing. `thread_pool` null means the shared pool.
template <typename Op>
std::future<std::size_t> parallel_io(Op op,
                                     std::size_t size,
                                     std::size_t file_offset,
                                     std::size_t task_size,
                                     ThreadPool* thread_pool = nullptr)
{
  const TaskPieces pieces(size, file_offset, std::max(task_size, page_size));
  if (pieces.count() == 0) {
    std::promise<std::size_t> done;
    done.set_value(0);
    return done.get_future();
  }
  auto& pool = thread_pool != nullptr ? *thread_pool : defaults::thread_pool();
  if (pieces.count() == 1) {
    // One piece (every small request): one job and one promise, none of the gathering.
    struct Single {
      std::optional<Op> op;
      TaskRange piece;
      std::promise<std::size_t> promise;
    };
    auto single = std::make_shared<Single>(Single{std::move(op), pieces[0], {}});
    auto future = single->promise.get_future();
    if (fail_enqueue_at_for_testing.load() == 0) { throw std::bad_alloc(); }
    pool.detach_task([single]() noexcept {
      KVIKIO_NVTX_SCOPED_RANGE("task", single->piece.size);
      std::size_t bytes = 0;
      std::exception_ptr error;
      try {
        bytes = (*single->op)(single->piece);
      } catch (...) {
        error = std::current_exception();
      }
      single->op.reset();  // before the future is ready: see Gather::finish
      if (error) {
        single->promise.set_exception(error);
      } else {
        single->promise.set_value(bytes);
      }
    });
    return future;
  }
  // The last job to finish fulfils the promise, so the future is a real one: wait_for()
  // answers truthfully and no thread of the pool blocks waiting on its siblings.
  struct Gather {
    Gather(Op o, TaskPieces p, std::size_t jobs) : op(std::move(o)), pieces(p), remaining_jobs(jobs)
    {
    }
    std::optional<Op> op;
    TaskPieces pieces;
    std::atomic<std::size_t> next_piece{0};
    std::atomic<std::size_t> remaining_jobs;
    std::atomic<std::size_t> bytes{0};
    std::mutex error_mutex;
    std::exception_ptr first_error;
    std::promise<std::size_t> promise;

    void finish()
    {
      // What `op` holds (the file) goes before the future is ready: the jobs hold this state
      // until the pool drops them, a moment later, and a caller that closes the file right
      // after get() must find its FileHandle the only owner, so that close() closes the
      // descriptors then and reports their errors (a write-back error at close on NFS).
      op.reset();
      if (first_error) {
        promise.set_exception(first_error);
      } else {
        promise.set_value(bytes.load());
      }
    }
    // Every piece runs even after one failed, as when each piece was its own task.
    void run() noexcept
    {
      for (std::size_t i = next_piece++; i < pieces.count(); i = next_piece++) {
        KVIKIO_NVTX_SCOPED_RANGE("task", pieces[i].size);
        try {
          bytes += (*op)(pieces[i]);
        } catch (...) {
          std::lock_guard lock(error_mutex);
          if (!first_error) { first_error = std::current_exception(); }
        }
      }
      if (remaining_jobs.fetch_sub(1) == 1) { finish(); }
    }
  };
  const std::size_t jobs = std::min<std::size_t>(pieces.count(), pool.get_thread_count());
  auto gather            = std::make_shared<Gather>(std::move(op), pieces, jobs);
  auto future            = gather->promise.get_future();
  for (std::size_t j = 0; j < jobs; ++j) {
    try {
      if (static_cast<int>(j) == fail_enqueue_at_for_testing.load()) { throw std::bad_alloc(); }
      pool.detach_task([gather]() noexcept { gather->run(); });
    } catch (...) {
      // Nothing queued: nothing runs, the caller may free the buffer. Otherwise the queued
      // jobs take every piece between them: the request completes, just with fewer jobs.
      if (j == 0) { throw; }
      if (gather->remaining_jobs.fetch_sub(jobs - j) == jobs - j) { gather->finish(); }
      break;
    }
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
