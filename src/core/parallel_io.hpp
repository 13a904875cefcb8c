#pragma once
// Running the pieces of a request on the shared pool, gathered into one future (the
// bookkeeping is core/job_group.hpp's; this file owns the piece cursor).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/nvtx.hpp>

#include "core/job_group.hpp"
#include "core/task_split.hpp"

namespace kvikio::detail {

/// Runs `op(TaskRange)` (returning the bytes it moved, throwing on failure) for every piece of
/// the request on the shared pool. The future is ready once every piece finished: it holds
/// the sum of the bytes, or the exception of the lowest-numbered piece that failed. Never
/// blocks the caller; `op` (what it holds: the file) is dropped before the future is ready.
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
  if (pieces.count() == 0) { return ready_future(0); }
  auto& pool = thread_pool != nullptr ? *thread_pool : defaults::thread_pool();
  struct Pieces {
    Pieces(Op o, TaskPieces p) : op(std::move(o)), pieces(p) {}
    std::optional<Op> op;
    TaskPieces pieces;
    std::atomic<std::size_t> next_piece{0};
    JobGroup group{1, [this] { op.reset(); }};  // 1: the caller's share, while it queues

    // Every piece runs even after one failed, as when each piece was its own task.
    void run() noexcept
    {
      std::size_t moved = 0;
      for (std::size_t i = next_piece++; i < pieces.count(); i = next_piece++) {
        KVIKIO_NVTX_SCOPED_RANGE("task", pieces[i].size);
        try {
          moved += (*op)(pieces[i]);
        } catch (...) {
          group.record(i, std::current_exception());
        }
      }
      group.add_bytes(moved);
      group.done();
    }
  };
  auto state             = std::make_shared<Pieces>(std::move(op), pieces);
  auto future            = state->group.future();
  const std::size_t jobs = std::min<std::size_t>(pieces.count(), pool.get_thread_count());
  state->group.queue_counted(pool, jobs, [state]() noexcept { state->run(); });
  state->group.done();
  return future;
}

}  // namespace kvikio::detail
