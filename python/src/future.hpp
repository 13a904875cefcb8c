#pragma once
// The results of non-blocking IO as Python sees them: IOFuture (pread/pwrite) and
// StreamIOFuture (raw_read_async/raw_write_async).
#include <cstddef>
#include <future>
#include <memory>

#include <nanobind/nanobind.h>

#include <kvikio/stream.hpp>

#include "buffer.hpp"

namespace kvikio::python {

/// The result of a non-blocking read or write. Holds the buffer until the IO is done; if
/// dropped before get(), the destructor waits for the IO so that no task writes into freed
/// memory.
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

  /// Waits for the IO (GIL released); returns the bytes moved or raises the first failure.
  /// A second call raises.
  std::size_t get();
  /// True when the IO has finished.
  [[nodiscard]] bool done() const;
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
