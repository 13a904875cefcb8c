#include "future.hpp"

#include <Python.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <nanobind/stl/string.h>

#include <kvikio/error.hpp>

#include "bindings.hpp"

namespace nb = nanobind;

namespace kvikio::python {
namespace {

/// How long a wait runs with the GIL released before it runs the signal handlers: the bound
/// on how late Ctrl-C takes effect, against a GIL round trip per slice.
constexpr auto signal_check_interval = std::chrono::milliseconds(20);

/// The futures of blocking calls interrupted by a signal, until their IO ends (reaped by the
/// next interruption and by interrupted_io_running()). Touched with the GIL held only.
/// Allocated once and never freed: what they hold is Python's, and must not be released
/// after the interpreter has finished.
std::list<IOFuture>& interrupted_io()
{
  static auto* futures = new std::list<IOFuture>;
  return *futures;
}

void reap_interrupted_io()
{
  interrupted_io().remove_if([](const IOFuture& f) { return f.done(); });
}

/// A calling thread's own thread for run_on_call_thread: its calls run in order.
class CallThread {
 public:
  CallThread() : pid_(::getpid()), thread_([this] { loop(); }) {}
  CallThread(const CallThread&)            = delete;
  CallThread& operator=(const CallThread&) = delete;
  ~CallThread()
  {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();  // after the call in progress, if any (its future holds the buffer)
  }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  std::future<std::size_t> submit(std::function<std::size_t()> call)
  {
    std::packaged_task<std::size_t()> task(std::move(call));
    auto future = task.get_future();
    {
      std::lock_guard lock(mutex_);
      calls_.push_back(std::move(task));
    }
    wake_.notify_one();
    return future;
  }

 private:
  void loop()
  {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || !calls_.empty(); });
      if (calls_.empty()) { return; }  // stopping, nothing left
      auto task = std::move(calls_.front());
      calls_.pop_front();
      lock.unlock();
      task();     // stores the result or the exception in the future
      task = {};  // what the call holds (the handle) goes before the next wait
      lock.lock();
    }
  }

  pid_t pid_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<std::size_t()>> calls_;
  bool stop_{false};
  std::thread thread_;  // last: started once the rest is made
};

}  // namespace

void wait_interruptibly(const std::future<std::size_t>& future)
{
  while (true) {
    {
      nb::gil_scoped_release release;
      if (future.wait_for(signal_check_interval) == std::future_status::ready) { return; }
    }
    if (PyErr_CheckSignals() != 0) { throw nb::python_error(); }
  }
}

std::size_t finish_blocking(IOFuture future)
{
  if (!interrupted_io().empty()) { reap_interrupted_io(); }
  try {
    return future.get();
  } catch (nb::python_error&) {
    if (future.pending()) {
      reap_interrupted_io();
      interrupted_io().push_back(std::move(future));
    }
    throw;
  }
}

std::future<std::size_t> run_on_call_thread(std::function<std::size_t()> call)
{
  thread_local std::unique_ptr<CallThread> mine;
  if (mine && mine->pid() != ::getpid()) {
    // Forked: the thread is the parent's and does not exist here. Forgotten, not destroyed
    // (that would join it).
    (void)mine.release();
  }
  if (!mine) { mine = std::make_unique<CallThread>(); }
  return mine->submit(std::move(call));
}

IOFuture::IOFuture(std::future<std::size_t> future,
                   BufferView view,
                   std::shared_ptr<void> keepalive)
  : future_(std::move(future)), view_(std::move(view)), keepalive_(std::move(keepalive))
{
}

IOFuture::~IOFuture()
{
  if (future_.valid() && future_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    nb::gil_scoped_release release;
    future_.wait();
  }
}

std::size_t IOFuture::get()
{
  if (!future_.valid()) {
    throw kvikio::Error("IOFuture.get() was already called (it returned " +
                        std::to_string(result_) + " bytes)");
  }
  // A request that finished on the calling thread (a small read from the page cache) is
  // ready already: releasing and retaking the GIL would cost more than the read did. On a
  // signal this throws with everything kept: the IO is still running.
  if (future_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    wait_interruptibly(future_);
  }
  std::size_t n = 0;
  try {
    n = future_.get();
  } catch (...) {
    // Failed IO lets its files go too, so that a close() right after closes them then and
    // reports their errors (reliability audit F8).
    view_ = BufferView{};
    keepalive_.reset();
    throw;
  }
  view_ = BufferView{};
  keepalive_.reset();
  result_ = n;
  return n;
}

bool IOFuture::done() const
{
  return !future_.valid() || future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

StreamIOFuture::StreamIOFuture(StreamFuture future, BufferView view)
  : view_(std::move(view)), future_(std::move(future))
{
}

std::size_t StreamIOFuture::check_bytes_done()
{
  nb::gil_scoped_release release;
  return future_.check_bytes_done();
}

void bind_future(nb::module_& m)
{
  nb::class_<IOFuture>(m, "IOFuture", "The result of a non-blocking read or write.")
    .def("get",
         &IOFuture::get,
         "Wait for the IO (GIL released); return the bytes moved or raise its error.")
    .def("done", &IOFuture::done, "True when the IO has finished.")
    // asyncio (future_await.cpp, kvikio/_aio.py): `await f` returns what get() would.
    .def("_notify_when_done",
         [](nb::object self, nb::object callback) {
           nb::cast<IOFuture&>(self).notify_when_done(self, std::move(callback));
         })
    .def("__await__",
         [](nb::object self) {
           return nb::module_::import_("kvikio._aio").attr("await_future")(self);
         })
    .def("__repr__", [](const IOFuture& f) {
      return std::string("<kvikio.IOFuture ") + (f.done() ? "done" : "pending") + ">";
    });
  m.def(
    "interrupted_io_running",
    [] {
      reap_interrupted_io();
      return interrupted_io().size();
    },
    "How many blocking reads/writes interrupted by a signal still run (their buffers are held "
    "until they end).");

  nb::class_<StreamIOFuture>(m,
                             "StreamIOFuture",
                             "The result of a stream-ordered read/write (raw_read_async, "
                             "raw_write_async): check_bytes_done() waits for the stream and "
                             "returns the bytes moved or raises the IO's error.")
    .def("check_bytes_done", &StreamIOFuture::check_bytes_done)
    .def("__repr__", [](const StreamIOFuture&) { return "<kvikio.IOFutureStream>"; });
}

}  // namespace kvikio::python
