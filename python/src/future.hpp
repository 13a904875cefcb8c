#pragma once
// The results of non-blocking IO as Python sees them: IOFuture (pread/pwrite) and
// StreamIOFuture (raw_read_async/raw_write_async).
#include <cstddef>
#include <functional>
#include <future>
#include <memory>

#include <nanobind/nanobind.h>

#include <kvikio/stream.hpp>

#include "buffer.hpp"

namespace kvikio::python {

/// The result of a non-blocking read or write. Holds the buffer until the IO is done; if
/// dropped before get(), the destructor waits for the IO so that no task writes into freed
/// memory.
///
/// Waits are interruptible (issue 23): get() waits in slices with the GIL released and runs
/// Python's signal handlers between them, so Ctrl-C raises KeyboardInterrupt within about
/// 20 ms. The IO itself is not cancelled: it runs on, and this future keeps the buffer (and
/// the file) until it ends; get() may be called again to wait for the rest.
class IOFuture {
 public:
  /// `keepalive`: what the IO reads from or writes to besides the buffer (a mapping, a remote
  /// handle), held until the IO is done.
  IOFuture(std::future<std::size_t> future,
           BufferView view,
           std::shared_ptr<void> keepalive = nullptr);
  IOFuture(IOFuture&&)            = default;
  IOFuture& operator=(IOFuture&&) = delete;
  IOFuture(const IOFuture&)       = delete;
  ~IOFuture();

  /// Waits for the IO (GIL released); returns the bytes moved or raises the first failure,
  /// letting the buffer and the files go either way. A second call raises. A signal
  /// handler's exception (KeyboardInterrupt) ends the wait and leaves the future pending.
  std::size_t get();
  /// True when the IO has finished.
  [[nodiscard]] bool done() const;
  /// True until get() returned or raised the IO's result.
  [[nodiscard]] bool pending() const noexcept { return future_.valid(); }
  /// Calls `callback()` (with the GIL) once the IO has finished, from a waiter thread of
  /// this module, never from the event loop: `await` hands the result to asyncio with it
  /// (future_await.cpp). `self` is this future's Python object, held until then. Do not call
  /// get() from another thread meanwhile.
  void notify_when_done(nanobind::object self, nanobind::object callback);

 private:
  std::future<std::size_t> future_;
  BufferView view_;
  std::shared_ptr<void> keepalive_;
  std::size_t result_{0};
};

/// Waits for `future` with the GIL released, taking it back every 20 ms to run Python's
/// signal handlers (PyErr_CheckSignals). Returns once the future is ready; throws
/// nb::python_error when a handler raised (Ctrl-C: KeyboardInterrupt). Call with the GIL held.
void wait_interruptibly(const std::future<std::size_t>& future);

/// The bytes of a blocking read or write whose IO `future` runs elsewhere (the pool, a call
/// thread): waited for as IOFuture::get waits. When a signal interrupts the wait, the future
/// (with the buffer and the file it holds) is kept in a process-wide list until its IO ends,
/// since the caller has no object to keep it in, and the handler's exception propagates.
std::size_t finish_blocking(IOFuture future);

/// Runs `call` on a thread of the calling thread's own (made on first use, one per calling
/// thread, calls run in the order given) and returns its result as a future: for a blocking
/// call that cannot be cut into pool tasks (RemoteFile.write, which may wait for uploads), so
/// that the caller can wait for it with finish_blocking.
std::future<std::size_t> run_on_call_thread(std::function<std::size_t()> call);

/// The result of a stream-ordered read/write of device memory (libkvikio's StreamFuture).
/// Holds the buffer and the argument block until destroyed.
class StreamIOFuture {
 public:
  StreamIOFuture(StreamFuture future, BufferView view);
  /// Waits for the stream (GIL released); returns the bytes moved or raises the failure.
  std::size_t check_bytes_done();

 private:
  BufferView view_;  // destroyed after future_, which may still wait on the stream
  StreamFuture future_;
};

}  // namespace kvikio::python
