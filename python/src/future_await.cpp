// `await future`: IOFuture::notify_when_done and the waiter threads behind it. A std::future
// has no completion callback and the engine that fulfils it belongs to libkvikio, so a waiter
// thread of this module blocks on it (GIL released) and then runs the Python callback, which
// hands the result to the event loop with loop.call_soon_threadsafe (kvikio/_aio.py). The
// event loop itself never blocks and never goes through asyncio's thread-pool executor.
#include <Python.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include <nanobind/nanobind.h>

#include "bindings.hpp"
#include "future.hpp"

namespace nb = nanobind;

namespace kvikio::python {
namespace {

/// Waiter threads, one per future being awaited at the moment up to kMaxThreads, reused when
/// idle (a waiter blocks on one future at a time: below the cap, a future that finishes early
/// never waits behind another; above it, futures wait their turn in submission order).
class Waiters {
 public:
  struct Job {
    const std::future<std::size_t>* ready;  // inside `self`'s IOFuture, which `self` keeps
    PyObject* self;                         // owned references, released with the GIL
    PyObject* callback;
  };

  void submit(Job job)
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(job);
    if (idle_ == 0 && threads_ < kMaxThreads) {
      ++threads_;
      std::thread([this] { run(); }).detach();
    } else {
      cv_.notify_one();
    }
  }

  /// Set at interpreter exit (kvikio._aio registers it with atexit): a waiter whose IO ends
  /// later must not take the GIL of an interpreter that is going away.
  std::atomic<bool> stopping{false};

 private:
  void run()
  {
    for (;;) {
      Job job{};
      {
        std::unique_lock lock(mutex_);
        ++idle_;
        cv_.wait(lock, [&] { return !jobs_.empty(); });
        --idle_;
        job = jobs_.front();
        jobs_.pop_front();
      }
      job.ready->wait();
      if (stopping.load() || Py_IsInitialized() == 0) { continue; }  // leak rather than crash
      PyGILState_STATE gil = PyGILState_Ensure();
      PyObject* result     = PyObject_CallNoArgs(job.callback);
      if (result == nullptr) {
        PyErr_WriteUnraisable(job.callback);
      } else {
        Py_DECREF(result);
      }
      Py_DECREF(job.callback);
      Py_DECREF(job.self);
      PyGILState_Release(gil);
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  int idle_{0};
  int threads_{0};
  static constexpr int kMaxThreads = 64;  // zarr awaits at most its async.concurrency at once
};

Waiters& waiters()
{
  static auto* w = new Waiters();  // never destroyed: detached threads use it until exit
  return *w;
}

}  // namespace

void IOFuture::notify_when_done(nb::object self, nb::object callback)
{
  if (!future_.valid()) {
    throw nb::value_error("IOFuture: get() was already called; there is nothing to wait for");
  }
  // The waiter only calls wait(), which may run beside this object's done() (both const).
  waiters().submit({&future_, self.release().ptr(), callback.release().ptr()});
}

void bind_future_await(nb::module_& m)
{
  m.def("_stop_future_waiters", [] { waiters().stopping = true; });
}

}  // namespace kvikio::python
