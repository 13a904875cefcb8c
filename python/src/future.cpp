#include "future.hpp"

#include <chrono>
#include <string>
#include <utility>

#include <nanobind/stl/string.h>

#include <kvikio/error.hpp>

#include "bindings.hpp"

namespace nb = nanobind;

namespace kvikio::python {

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
  std::size_t n = 0;
  try {
    // A request that finished on the calling thread (a small read from the page cache) is
    // ready already: releasing and retaking the GIL would cost more than the read did.
    if (future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      n = future_.get();
    } else {
      nb::gil_scoped_release release;
      n = future_.get();
    }
  } catch (...) {
    view_ = BufferView{};
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

  nb::class_<StreamIOFuture>(m,
                             "StreamIOFuture",
                             "The result of a stream-ordered read/write (raw_read_async, "
                             "raw_write_async): check_bytes_done() waits for the stream and "
                             "returns the bytes moved or raises the IO's error.")
    .def("check_bytes_done", &StreamIOFuture::check_bytes_done)
    .def("__repr__", [](const StreamIOFuture&) { return "<kvikio.IOFutureStream>"; });
}

}  // namespace kvikio::python
