// Batched IO: cuFile's batch API where every file uses cuFile, else the POSIX path on the pool.
#include <kvikio/batch.hpp>
#include <kvikio/error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "api/open_handle.hpp"
#include "api/request.hpp"
#include "core/job_group.hpp"
#include "device/pointer.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio {

struct BatchHandle::Impl {
  int max_num_events{0};
  CUfileBatchHandle_t cufile{nullptr};
  bool using_cufile{false};

  // POSIX fallback state, shared with the pool tasks so that they never outlive it.
  struct Shared {
    std::mutex mutex;
    std::condition_variable done_cv;
    std::vector<BatchIOEvent> finished;  // not yet reported
    std::size_t running{0};
    std::atomic<bool> cancel{false};
  };
  std::shared_ptr<Shared> shared = std::make_shared<Shared>();
  // The files of the current cuFile submission, held so that their cuFile handles stay
  // registered while the batch runs even if the FileHandles close (the POSIX tasks hold theirs).
  std::vector<std::shared_ptr<detail::OpenHandle>> cufile_files;
  std::size_t cufile_unreported{0};  // operations of that submission not yet reported done

  void wait_idle()
  {
    std::unique_lock lock(shared->mutex);
    shared->done_cv.wait(lock, [&] { return shared->running == 0; });
  }
};

BatchHandle::BatchHandle() noexcept = default;

BatchHandle::BatchHandle(int max_num_events) : impl_(std::make_unique<Impl>())
{
  if (max_num_events <= 0) {
    throw std::invalid_argument("BatchHandle: max_num_events must be positive, got " +
                                std::to_string(max_num_events));
  }
  impl_->max_num_events = max_num_events;
  auto& api             = detail::CufileAPI::instance();
  if (!defaults::is_compat_mode_preferred() && api.batch_api() && api.driver_open()) {
    detail::cufile_check(api.BatchIOSetUp(&impl_->cufile, static_cast<unsigned>(max_num_events)),
                         "cuFileBatchIOSetUp",
                         "for " + std::to_string(max_num_events) + " events");
  }
}

BatchHandle::BatchHandle(BatchHandle&&) noexcept = default;
BatchHandle& BatchHandle::operator=(BatchHandle&& o) noexcept
{
  if (this != &o) {
    close();
    impl_ = std::move(o.impl_);
  }
  return *this;
}
BatchHandle::~BatchHandle() noexcept { close(); }

bool BatchHandle::closed() const noexcept { return impl_ == nullptr; }
bool BatchHandle::uses_cufile() const noexcept { return impl_ && impl_->using_cufile; }

void BatchHandle::close() noexcept
{
  if (!impl_) { return; }
  impl_->shared->cancel = true;
  impl_->wait_idle();
  if (impl_->cufile != nullptr) { detail::CufileAPI::instance().BatchIODestroy(impl_->cufile); }
  impl_.reset();
}

void BatchHandle::submit(const std::vector<BatchOp>& operations)
{
  if (!impl_) { throw std::invalid_argument("submit() on a closed BatchHandle"); }
  if (operations.size() > static_cast<std::size_t>(impl_->max_num_events)) {
    throw CUfileException("cannot submit " + std::to_string(operations.size()) +
                          " operations to a batch of at most " +
                          std::to_string(impl_->max_num_events));
  }
  bool all_cufile = impl_->cufile != nullptr;
  for (const auto& op : operations) {
    if (op.opcode != CUFILE_READ && op.opcode != CUFILE_WRITE) {
      throw std::invalid_argument("batch operation on '" + op.file_handle.path() +
                                  "' has an unknown opcode " +
                                  std::to_string(static_cast<int>(op.opcode)));
    }
    if (op.file_handle.closed()) {
      throw std::invalid_argument("batch operation on closed file '" + op.file_handle.path() + "'");
    }
    if (op.file_offset < 0 || op.devPtr_offset < 0) {
      throw std::invalid_argument("batch operation on '" + op.file_handle.path() +
                                  "' has a negative offset");
    }
    if (op.file_handle.handle() == nullptr) { all_cufile = false; }
  }
  impl_->shared->cancel = false;
  impl_->using_cufile   = all_cufile;
  impl_->cufile_files.clear();
  impl_->cufile_unreported = 0;
  if (all_cufile) {
    impl_->cufile_unreported = operations.size();
    for (const auto& op : operations) {
      impl_->cufile_files.push_back(detail::open_state(op.file_handle));
    }
    std::vector<CUfileIOParams_t> params(operations.size());
    for (std::size_t i = 0; i < operations.size(); ++i) {
      const auto& op                  = operations[i];
      params[i].mode                  = CUFILE_BATCH;
      params[i].u.batch.devPtr_base   = op.devPtr_base;
      params[i].u.batch.file_offset   = op.file_offset;
      params[i].u.batch.devPtr_offset = op.devPtr_offset;
      params[i].u.batch.size          = op.size;
      params[i].fh                    = op.file_handle.handle();
      params[i].opcode                = op.opcode;
      params[i].cookie                = reinterpret_cast<void*>(i);
    }
    // cuFile resolves the device buffers in the current context: use the buffers' own.
    detail::ContextGuard guard(
      operations.empty() ? nullptr : detail::get_pointer_info(operations[0].devPtr_base).context);
    detail::cufile_check(detail::CufileAPI::instance().BatchIOSubmit(
                           impl_->cufile, static_cast<unsigned>(params.size()), params.data(), 0),
                         "cuFileBatchIOSubmit",
                         "of " + std::to_string(params.size()) + " operations");
    return;
  }
  // The POSIX fallback: one job per pool thread at most, taking the operations in order.
  struct Run {
    struct Op {
      std::shared_ptr<detail::OpenHandle> file;  // not the FileHandle, which may close meanwhile
      detail::Direction direction;
      char* buf;
      std::size_t size;
      std::size_t offset;
    };
    std::shared_ptr<Impl::Shared> shared;
    std::vector<Op> ops;
    std::atomic<std::size_t> next{0};
    detail::JobGroup group{1};  // the jobs, and the caller's share while it queues them

    // Each operation lets its file go before it reports: a caller that closes the file right
    // after status() says COMPLETE must find its FileHandle the only owner, so that close()
    // closes the descriptors then (and reports their errors).
    void run() noexcept
    {
      for (std::size_t i = next++; i < ops.size(); i = next++) {
        auto op = std::move(ops[i]);
        BatchIOEvent ev{reinterpret_cast<void*>(i), CUFILE_COMPLETE, 0};
        if (shared->cancel) {
          ev.status = CUFILE_CANCELED;
        } else {
          try {
            ev.ret = detail::io_now(op.direction,
                                    op.direction == detail::Direction::read ? "read" : "write",
                                    *op.file,
                                    op.buf,
                                    op.size,
                                    op.offset);
          } catch (const std::system_error& e) {
            ev.status     = CUFILE_FAILED;
            ev.error_code = e.code().value();
            ev.error      = e.what();
          } catch (const std::exception& e) {
            ev.status = CUFILE_FAILED;
            ev.error  = e.what();
          } catch (...) {
            ev.status = CUFILE_FAILED;
            ev.error  = "unknown exception";
          }
        }
        op.file.reset();
        std::lock_guard lock(shared->mutex);
        shared->finished.push_back(std::move(ev));
        --shared->running;
        shared->done_cv.notify_all();
      }
      group.done();
    }
  };
  auto run    = std::make_shared<Run>();
  run->shared = impl_->shared;
  run->ops.reserve(operations.size());
  for (const auto& op : operations) {
    run->ops.push_back(
      {detail::open_state(op.file_handle),
       op.opcode == CUFILE_READ ? detail::Direction::read : detail::Direction::write,
       static_cast<char*>(op.devPtr_base) + op.devPtr_offset,
       op.size,
       static_cast<std::size_t>(op.file_offset)});
  }
  if (operations.empty()) { return; }
  auto& pool             = defaults::thread_pool();
  const std::size_t jobs = std::min<std::size_t>(operations.size(), pool.get_thread_count());
  {
    std::lock_guard lock(impl_->shared->mutex);
    impl_->shared->running += operations.size();
  }
  try {
    run->group.queue_counted(pool, jobs, [run]() noexcept { run->run(); });
  } catch (...) {
    std::lock_guard lock(impl_->shared->mutex);  // nothing queued: nothing runs
    impl_->shared->running -= operations.size();
    throw;
  }
  run->group.done();
}

std::vector<CUfileIOEvents_t> BatchHandle::status(unsigned min_nr,
                                                  unsigned max_nr,
                                                  struct timespec* timeout)
{
  if (!impl_) { throw std::invalid_argument("status() on a closed BatchHandle"); }
  auto details = status_details(min_nr, max_nr, timeout);
  std::vector<CUfileIOEvents_t> out;
  out.reserve(details.size());
  for (const auto& ev : details) {
    out.push_back(CUfileIOEvents_t{ev.cookie, ev.status, ev.ret});
  }
  return out;
}

std::vector<BatchIOEvent> BatchHandle::status_details(unsigned min_nr,
                                                      unsigned max_nr,
                                                      struct timespec* timeout)
{
  if (!impl_) { throw std::invalid_argument("status() on a closed BatchHandle"); }
  std::vector<BatchIOEvent> out;
  if (impl_->using_cufile) {
    std::vector<CUfileIOEvents_t> events(static_cast<std::size_t>(impl_->max_num_events));
    unsigned nr = std::min<unsigned>(max_nr, static_cast<unsigned>(impl_->max_num_events));
    detail::cufile_check(detail::CufileAPI::instance().BatchIOGetStatus(
                           impl_->cufile, min_nr, &nr, events.data(), timeout),
                         "cuFileBatchIOGetStatus");
    for (unsigned i = 0; i < nr; ++i) {
      out.push_back({events[i].cookie, events[i].status, events[i].ret});
      const auto st = events[i].status;
      if (st != CUFILE_WAITING && st != CUFILE_PENDING && impl_->cufile_unreported > 0) {
        --impl_->cufile_unreported;
      }
    }
    // Every operation reported: the files go now, not at the next submit(), so that a
    // close() right after the last COMPLETE closes the descriptors then (as on the POSIX path).
    if (impl_->cufile_unreported == 0) { impl_->cufile_files.clear(); }
    return out;
  }
  auto& s = *impl_->shared;
  std::unique_lock lock(s.mutex);
  auto ready = [&] { return s.finished.size() >= min_nr || s.running == 0; };
  if (timeout == nullptr) {
    s.done_cv.wait(lock, ready);
  } else {
    auto d = std::chrono::seconds(timeout->tv_sec) + std::chrono::nanoseconds(timeout->tv_nsec);
    s.done_cv.wait_for(lock, d, ready);
  }
  const std::size_t n = std::min<std::size_t>(max_nr, s.finished.size());
  out.assign(s.finished.begin(), s.finished.begin() + static_cast<long>(n));
  s.finished.erase(s.finished.begin(), s.finished.begin() + static_cast<long>(n));
  return out;
}

void BatchHandle::cancel()
{
  if (!impl_) { throw std::invalid_argument("cancel() on a closed BatchHandle"); }
  if (impl_->using_cufile) {
    detail::cufile_check(detail::CufileAPI::instance().BatchIOCancel(impl_->cufile),
                         "cuFileBatchIOCancel");
    return;
  }
  impl_->shared->cancel = true;
  impl_->wait_idle();
}

}  // namespace kvikio
