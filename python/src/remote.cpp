// kvikio._lib.RemoteFile (libkvikio's RemoteHandle over HTTP, S3 and WebHDFS), the endpoint
// type enum, and the translation of remote errors into kvikio.remote_file's exceptions.
#include <Python.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "args.hpp"
#include "bindings.hpp"
#include "buffer.hpp"
#include "future.hpp"
#include "os_error.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvikio::python {
namespace {

/// A remote file: a RemoteHandle shared with the reads running on it.
class Remote {
 public:
  explicit Remote(std::shared_ptr<RemoteHandle> handle)
    : handle_(std::move(handle)), nbytes_(handle_->nbytes())
  {
  }

  /// Makes the endpoint and, without `nbytes`, asks the server for the size, GIL released.
  template <typename MakeEndpoint>
  static Remote make(MakeEndpoint make_endpoint, nb::handle nbytes)
  {
    auto n = to_opt_size(nbytes, "nbytes");
    std::shared_ptr<RemoteHandle> handle;
    {
      nb::gil_scoped_release release;
      std::unique_ptr<RemoteEndpoint> endpoint = make_endpoint();
      handle = n ? std::make_shared<RemoteHandle>(std::move(endpoint), *n)
                 : std::make_shared<RemoteHandle>(std::move(endpoint));
    }
    return Remote(std::move(handle));
  }

  /// Like make, for `mode` "r" (read: as make), "w" (write) or "a" (append, WebHDFS).
  template <typename MakeEndpoint>
  static Remote make_mode(MakeEndpoint make_endpoint,
                          nb::handle nbytes,
                          const std::string& mode,
                          nb::handle part_size,
                          bool overwrite                = true,
                          nb::handle max_buffered_parts = nb::none())
  {
    if (mode == "r") {
      if (!part_size.is_none() || !max_buffered_parts.is_none()) {
        throw nb::value_error(
          "part_size and max_buffered_parts are for writing (mode 'w' or 'a'), not mode 'r'");
      }
      return make(make_endpoint, nbytes);
    }
    if (mode != "w" && mode != "a") {
      throw nb::value_error(
        ("mode must be 'r', 'w' or 'a' (WebHDFS), not " + repr_of(nb::str(mode.c_str()))).c_str());
    }
    RemoteWriteOptions options;
    options.nbytes             = to_opt_size(nbytes, "nbytes");
    options.part_size          = to_opt_size(part_size, "part_size");
    options.overwrite          = overwrite;
    options.max_buffered_parts = to_opt_size(max_buffered_parts, "max_buffered_parts");
    std::shared_ptr<RemoteHandle> handle;
    {
      nb::gil_scoped_release release;
      handle = std::make_shared<RemoteHandle>(
        make_endpoint(), mode == "w" ? RemoteOpenMode::WRITE : RemoteOpenMode::APPEND, options);
    }
    return Remote(std::move(handle));
  }

  static Remote open(const std::string& url,
                     RemoteEndpointType type,
                     std::optional<std::vector<RemoteEndpointType>> allow_list,
                     nb::handle nbytes)
  {
    auto n = to_opt_size(nbytes, "nbytes");
    std::shared_ptr<RemoteHandle> handle;
    {
      nb::gil_scoped_release release;
      handle = std::make_shared<RemoteHandle>(RemoteHandle::open(url, type, allow_list, n));
    }
    return Remote(std::move(handle));
  }

  /// Drops this object's hold on the handle; reads already queued keep theirs. A write handle
  /// is committed first (GIL released); if that fails it is aborted, closed, and the error
  /// raised.
  void close()
  {
    auto handle = std::move(handle_);
    if (handle && handle->mode() != RemoteOpenMode::READ) {
      nb::gil_scoped_release release;
      handle->close();
    }
  }
  /// Aborts a write handle's upload (nothing on a read handle) and closes it.
  void abort() noexcept
  {
    auto handle = std::move(handle_);
    if (handle) {
      nb::gil_scoped_release release;
      handle->abort();
    }
  }
  [[nodiscard]] std::string mode() const
  {
    switch (checked()->mode()) {
      case RemoteOpenMode::READ:
        return "r";
      case RemoteOpenMode::WRITE:
        return "w";
      case RemoteOpenMode::APPEND:
        return "a";
    }
    return "r";
  }
  [[nodiscard]] bool closed() const noexcept { return !handle_; }
  [[nodiscard]] std::size_t nbytes() const noexcept
  {
    return handle_ && handle_->mode() != RemoteOpenMode::READ ? handle_->nbytes() : nbytes_;
  }
  [[nodiscard]] RemoteEndpointType remote_endpoint_type() const
  {
    return checked()->remote_endpoint_type();
  }
  [[nodiscard]] std::string str() const { return checked()->endpoint().str(); }

  IOFuture pread(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    auto view             = BufferView::from_object(buf, /*writable=*/true);
    auto handle           = checked();
    const std::size_t n   = request_size(view, size);
    const std::size_t off = to_size(file_offset, "file_offset");
    const std::size_t ts  = task_size_or_default(task_size);
    // pread checks the range and returns at once; the transfers run on the pool.
    auto future = handle->pread(view.ptr(), n, off, ts);
    return {std::move(future), std::move(view), std::move(handle)};
  }

  /// Blocking read: pread, waited for so that a signal (Ctrl-C) interrupts the wait.
  std::size_t read(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    return finish_blocking(pread(buf, size, file_offset, task_size));
  }

  /// `requests`: an iterable of (buf[, size[, file_offset]]); size None: the whole buffer.
  IOFuture pread_batch(nb::handle requests)
  {
    struct Keepalive {
      std::vector<BufferView> views;
      std::shared_ptr<RemoteHandle> handle;
    };
    auto keep    = std::make_shared<Keepalive>();
    keep->handle = checked();
    std::vector<IORequest> batch;
    std::size_t index = 0;
    for (nb::handle item : requests) {
      const std::string where = "batch request " + std::to_string(index) + ": ";
      if (!PySequence_Check(item.ptr()) || PyUnicode_Check(item.ptr()) ||
          PyBytes_Check(item.ptr())) {
        throw nb::type_error((where + "expected a tuple, got " +
                              nb::cast<std::string>(nb::str(item.type().attr("__name__"))))
                               .c_str());
      }
      const auto len = static_cast<std::size_t>(nb::len(item));
      if (len < 1 || len > 3) {
        throw nb::type_error(
          (where + "expected (buf[, size[, file_offset]]), got " + std::to_string(len) + " items")
            .c_str());
      }
      auto at = [&](std::size_t k) {
        return nb::steal(PySequence_GetItem(item.ptr(), static_cast<Py_ssize_t>(k)));
      };
      auto view             = BufferView::from_object(at(0), /*writable=*/true);
      const std::size_t n   = request_size(view, len > 1 ? at(1) : nb::none());
      const std::size_t off = len > 2 ? to_size(at(2), "file_offset") : 0;
      batch.push_back({view.ptr(), n, off});
      keep->views.push_back(std::move(view));
      ++index;
    }
    std::future<std::size_t> future;
    {
      nb::gil_scoped_release release;
      future = keep->handle->pread_batch(batch);
    }
    return {std::move(future), BufferView{}, std::move(keep)};
  }

  /// Copies the bytes into part buffers before returning; `task_size` is accepted for
  /// symmetry with the read methods (writes go in parts of `part_size`). The copy runs on
  /// this thread's call thread, waited for so that a signal (Ctrl-C) interrupts the wait: a
  /// write may wait for an upload to free a part buffer, for as long as the upload's retries.
  std::size_t write(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    auto view           = BufferView::from_object(buf, /*writable=*/false);
    auto handle         = checked();
    const std::size_t n = request_size(view, size);
    auto off            = to_opt_size(file_offset, "file_offset");
    (void)task_size_or_default(task_size);
    const void* ptr = view.ptr();
    auto future = run_on_call_thread([handle, ptr, n, off] { return handle->write(ptr, n, off); });
    return finish_blocking({std::move(future), std::move(view), std::move(handle)});
  }

  IOFuture pwrite(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    auto view             = BufferView::from_object(buf, /*writable=*/false);
    auto handle           = checked();
    const std::size_t n   = request_size(view, size);
    const std::size_t off = file_offset.is_none() ? 0 : to_size(file_offset, "file_offset");
    (void)task_size_or_default(task_size);
    std::future<std::size_t> future;
    {
      nb::gil_scoped_release release;
      future = handle->pwrite(view.ptr(), n, off);
    }
    return {std::move(future), std::move(view), std::move(handle)};
  }

 private:
  [[nodiscard]] std::shared_ptr<RemoteHandle> checked() const
  {
    if (!handle_) { throw_closed("I/O operation on a closed RemoteFile"); }
    return handle_;
  }
  std::shared_ptr<RemoteHandle> handle_;
  std::size_t nbytes_;
};

/// Raises kvikio.remote_file.<name> (a RuntimeError subclass defined in Python, so that it
/// is typed and documented there) with the message, the redacted URL and the HTTP status.
void raise_remote_error(const char* name, const RemoteError& e)
{
  try {
    nb::object cls = nb::module_::import_("kvikio.remote_file").attr(name);
    nb::object exc = cls(e.what(), e.url(), e.http_status());
    PyErr_SetObject(cls.ptr(), exc.ptr());
  } catch (const std::exception&) {
    // The class could not be made (the package half-imported?): keep the message at least.
    PyErr_Clear();
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

}  // namespace

void bind_remote(nb::module_& m)
{
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const RemoteIncompleteWriteError& e) {
      raise_remote_error("RemoteIncompleteWriteError", e);
    } catch (const RemoteWritePastEndError& e) {
      raise_remote_error("RemoteWritePastEndError", e);
    } catch (const RemoteWriteError& e) {
      raise_remote_error("RemoteWriteError", e);
    } catch (const RemoteModeError& e) {
      raise_remote_error("RemoteModeError", e);
    } catch (const RemoteTimeoutError& e) {
      raise_remote_error("RemoteTimeoutError", e);
    } catch (const RemoteTransportError& e) {
      raise_remote_error("RemoteTransportError", e);
    } catch (const RemoteHttpError& e) {
      raise_remote_error("RemoteHttpError", e);
    } catch (const RemoteRangeError& e) {
      raise_remote_error("RemoteRangeError", e);
    } catch (const RemoteTruncatedError& e) {
      raise_remote_error("RemoteTruncatedError", e);
    } catch (const RemoteError& e) {
      raise_remote_error("RemoteError", e);
    }
  });

  nb::enum_<RemoteEndpointType>(
    m, "RemoteEndpointType", "The kinds of remote endpoint (AUTO: inferred from the URL).")
    .value("AUTO", RemoteEndpointType::AUTO)
    .value("S3", RemoteEndpointType::S3)
    .value("S3_PUBLIC", RemoteEndpointType::S3_PUBLIC)
    .value("S3_PRESIGNED_URL", RemoteEndpointType::S3_PRESIGNED_URL)
    .value("WEBHDFS", RemoteEndpointType::WEBHDFS)
    .value("HTTP", RemoteEndpointType::HTTP);

  using OptStr = std::optional<std::string>;
  auto cls     = nb::class_<Remote>(m, "RemoteFile", "A remote file (libkvikio's RemoteHandle).");
  cls
    .def_static(
      "open_http",
      [](const std::string& url, nb::handle nbytes) {
        return Remote::make([&] { return std::make_unique<HttpEndpoint>(url); }, nbytes);
      },
      "url"_a,
      "nbytes"_a = nb::none())
    .def_static(
      "open_s3",
      [](const std::string& bucket,
         const std::string& object,
         nb::handle nbytes,
         OptStr region,
         OptStr key,
         OptStr secret,
         OptStr endpoint_url,
         OptStr token,
         const std::string& mode,
         nb::handle part_size,
         nb::handle max_buffered_parts) {
        return Remote::make_mode(
          [&] {
            return std::make_unique<S3Endpoint>(
              std::make_pair(bucket, object), region, key, secret, endpoint_url, token);
          },
          nbytes,
          mode,
          part_size,
          true,
          max_buffered_parts);
      },
      "bucket_name"_a,
      "object_name"_a,
      "nbytes"_a                = nb::none(),
      "aws_region"_a            = nb::none(),
      "aws_access_key_id"_a     = nb::none(),
      "aws_secret_access_key"_a = nb::none(),
      "aws_endpoint_url"_a      = nb::none(),
      "aws_session_token"_a     = nb::none(),
      "mode"_a                  = "r",
      "part_size"_a             = nb::none(),
      "max_buffered_parts"_a    = nb::none())
    .def_static(
      "open_s3_from_http_url",
      [](const std::string& url,
         nb::handle nbytes,
         OptStr region,
         OptStr key,
         OptStr secret,
         OptStr token,
         const std::string& mode,
         nb::handle part_size,
         nb::handle max_buffered_parts) {
        return Remote::make_mode(
          [&] { return std::make_unique<S3Endpoint>(url, region, key, secret, token); },
          nbytes,
          mode,
          part_size,
          true,
          max_buffered_parts);
      },
      "url"_a,
      "nbytes"_a                = nb::none(),
      "aws_region"_a            = nb::none(),
      "aws_access_key_id"_a     = nb::none(),
      "aws_secret_access_key"_a = nb::none(),
      "aws_session_token"_a     = nb::none(),
      "mode"_a                  = "r",
      "part_size"_a             = nb::none(),
      "max_buffered_parts"_a    = nb::none())
    .def_static(
      "open_s3_from_s3_url",
      [](const std::string& url,
         nb::handle nbytes,
         OptStr region,
         OptStr key,
         OptStr secret,
         OptStr endpoint_url,
         OptStr token,
         const std::string& mode,
         nb::handle part_size,
         nb::handle max_buffered_parts) {
        return Remote::make_mode(
          [&] {
            return std::make_unique<S3Endpoint>(
              S3Endpoint::parse_s3_url(url), region, key, secret, endpoint_url, token);
          },
          nbytes,
          mode,
          part_size,
          true,
          max_buffered_parts);
      },
      "url"_a,
      "nbytes"_a                = nb::none(),
      "aws_region"_a            = nb::none(),
      "aws_access_key_id"_a     = nb::none(),
      "aws_secret_access_key"_a = nb::none(),
      "aws_endpoint_url"_a      = nb::none(),
      "aws_session_token"_a     = nb::none(),
      "mode"_a                  = "r",
      "part_size"_a             = nb::none(),
      "max_buffered_parts"_a    = nb::none())
    .def_static(
      "open_s3_public",
      [](const std::string& url, nb::handle nbytes) {
        return Remote::make([&] { return std::make_unique<S3PublicEndpoint>(url); }, nbytes);
      },
      "url"_a,
      "nbytes"_a = nb::none())
    .def_static(
      "open_s3_presigned_url",
      [](const std::string& url, nb::handle nbytes, const std::string& mode) {
        return Remote::make_mode([&] { return std::make_unique<S3EndpointWithPresignedUrl>(url); },
                                 nbytes,
                                 mode,
                                 nb::none());
      },
      "presigned_url"_a,
      "nbytes"_a = nb::none(),
      "mode"_a   = "r")
    .def_static(
      "open_webhdfs",
      [](const std::string& url,
         nb::handle nbytes,
         const std::string& mode,
         nb::handle part_size,
         bool overwrite,
         nb::handle max_buffered_parts) {
        return Remote::make_mode([&] { return std::make_unique<WebHdfsEndpoint>(url); },
                                 nbytes,
                                 mode,
                                 part_size,
                                 overwrite,
                                 max_buffered_parts);
      },
      "url"_a,
      "nbytes"_a             = nb::none(),
      "mode"_a               = "r",
      "part_size"_a          = nb::none(),
      "overwrite"_a          = true,
      "max_buffered_parts"_a = nb::none())
    .def_static("open",
                &Remote::open,
                "url"_a,
                "remote_endpoint_type"_a = RemoteEndpointType::AUTO,
                "allow_list"_a           = nb::none(),
                "nbytes"_a               = nb::none())
    .def("close", &Remote::close)
    .def("abort", &Remote::abort)
    .def("mode", &Remote::mode)
    .def_prop_ro("closed", &Remote::closed)
    .def("nbytes", &Remote::nbytes)
    .def("remote_endpoint_type", &Remote::remote_endpoint_type)
    .def("__str__", &Remote::str);
  def_parallel_io(cls, "pread", &Remote::pread, DefaultOffset::ZERO);
  def_parallel_io(cls, "read", &Remote::read, DefaultOffset::ZERO);
  cls.def("pread_batch", &Remote::pread_batch, "requests"_a);
  def_parallel_io(cls, "write", &Remote::write, DefaultOffset::NONE);
  def_parallel_io(cls, "pwrite", &Remote::pwrite, DefaultOffset::ZERO);
  m.def(
    "infer_remote_endpoint_type",
    [](const std::string& url) { return infer_remote_endpoint_type(url); },
    "url"_a);
  m.def(
    "redact_url", [](const std::string& url) { return redact_url(url); }, "url"_a);
}

}  // namespace kvikio::python
