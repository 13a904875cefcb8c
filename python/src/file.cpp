// kvikio._lib.FileHandle (a local file) and the page-cache helpers.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <kvikio/batch_io.hpp>
#include <kvikio/compat_mode.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/stream.hpp>

#include "args.hpp"
#include "bindings.hpp"
#include "buffer.hpp"
#include "future.hpp"
#include "os_error.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvikio::python {
namespace {

class File {
 public:
  File(const std::string& path,
       const std::string& flags,
       mode_t mode,
       std::optional<CompatMode> compat)
    : path_(path)
  {
    auto handle = std::make_shared<FileHandle>();
    {
      nb::gil_scoped_release release;
      *handle = FileHandle(path, flags, mode, compat.value_or(defaults::compat_mode()));
    }
    handle_ = std::move(handle);
  }

  /// Closes the file; OSError when close(2) fails, as io.FileIO.close() (the object is closed
  /// either way). A blocking call running in another thread keeps its own hold, so the file
  /// is then closed when that call returns, never under it, and unchecked.
  void close()
  {
    auto handle = std::move(handle_);
    if (handle && handle.use_count() == 1) {
      nb::gil_scoped_release release;  // close(2) can wait for write-back (NFS)
      handle->close();
    }
  }
  /// fsync(2) of the file; OSError on failure, ValueError on a closed file.
  void fsync() const
  {
    auto handle = checked();
    nb::gil_scoped_release release;
    handle->fsync();
  }
  [[nodiscard]] bool closed() const noexcept { return !handle_ || handle_->closed(); }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] int fd() const { return checked()->fd(); }
  [[nodiscard]] int open_flags() const { return checked()->fd_open_flags(); }
  [[nodiscard]] std::size_t nbytes() const { return checked()->nbytes(); }
  [[nodiscard]] CompatMode compat_mode() const noexcept
  {
    return handle_ ? handle_->compat_mode() : CompatMode::ON;
  }
  [[nodiscard]] bool is_direct_io_supported() const noexcept
  {
    return handle_ && handle_->is_direct_io_supported();
  }

  IOFuture pread(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    auto view             = BufferView::from_object(buf, /*writable=*/true);
    const std::size_t n   = request_size(view, size);
    const std::size_t off = to_size(file_offset, "file_offset");
    const std::size_t ts  = task_size_or_default(task_size);
    auto future           = checked()->pread(view.ptr(), n, off, ts);
    return {std::move(future), std::move(view)};
  }

  IOFuture pwrite(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    auto view           = BufferView::from_object(buf, /*writable=*/false);
    const std::size_t n = request_size(view, size);
    const std::size_t off =
      file_offset.is_none() ? unspecified_offset : to_size(file_offset, "file_offset");
    const std::size_t ts = task_size_or_default(task_size);
    auto future          = checked()->pwrite(view.ptr(), n, off, ts);
    return {std::move(future), std::move(view)};
  }

  /// Blocking read. A request that pread() would run as one piece (or a device request below
  /// gds_threshold, which pread() runs on the calling thread anyway) runs here, with the GIL
  /// released: handing a 4 KiB read to the pool costs several times the read itself (issue
  /// 14). Larger requests are split over the pool as pread() does, and a signal (Ctrl-C)
  /// interrupts the wait for them (finish_blocking). Same results either way.
  std::size_t read(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    return blocking_io(false, buf, size, file_offset, task_size);
  }

  /// Blocking write; see read().
  std::size_t write(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    return blocking_io(true, buf, size, file_offset, task_size);
  }

  std::size_t blocking_io(
    bool write, nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    auto view           = BufferView::from_object(buf, /*writable=*/!write);
    const std::size_t n = request_size(view, size);
    const std::size_t off =
      write && file_offset.is_none() ? unspecified_offset : to_size(file_offset, "file_offset");
    const std::size_t ts = task_size_or_default(task_size);
    auto handle          = checked();
    auto* ptr            = view.ptr();
    // pread() raises task_size to a page, so a request up to a page is one piece too.
    const bool one_piece    = ts > 0 && n <= std::max<std::size_t>(ts, 4096);
    const bool small_device = view.is_device() && n < defaults::gds_threshold();
    if (one_piece && !small_device) {
      // One system call or pipeline on this thread: a signal takes effect when it returns.
      nb::gil_scoped_release release;
      return write ? handle->write(ptr, n, off, 0) : handle->read(ptr, n, off, 0);
    }
    // Split over the pool (or, for a small device request, the POSIX path on this thread),
    // waited for so that Ctrl-C interrupts the wait (issue 23).
    std::future<std::size_t> future;
    {
      nb::gil_scoped_release release;
      future = write ? handle->pwrite(ptr, n, off, ts) : handle->pread(ptr, n, off, ts);
    }
    return finish_blocking({std::move(future), std::move(view), std::move(handle)});
  }

  /// One blocking call on the calling thread, without splitting into tasks.
  std::size_t raw_read(nb::handle buf,
                       nb::handle size,
                       nb::handle file_offset,
                       nb::handle dev_offset)
  {
    auto view             = device_view(buf, /*writable=*/true, "raw_read");
    const std::size_t bo  = to_size(dev_offset, "dev_offset");
    const std::size_t n   = request_size(view, size, bo, "dev_offset");
    const std::size_t off = to_size(file_offset, "file_offset");
    auto handle           = checked();
    nb::gil_scoped_release release;
    return handle->read(view.ptr(), n, off, bo);
  }

  std::size_t raw_write(nb::handle buf,
                        nb::handle size,
                        nb::handle file_offset,
                        nb::handle dev_offset)
  {
    auto view            = device_view(buf, /*writable=*/false, "raw_write");
    const std::size_t bo = to_size(dev_offset, "dev_offset");
    const std::size_t n  = request_size(view, size, bo, "dev_offset");
    const std::size_t off =
      file_offset.is_none() ? unspecified_offset : to_size(file_offset, "file_offset");
    auto handle = checked();
    nb::gil_scoped_release release;
    return handle->write(view.ptr(), n, off, bo);
  }

  /// Stream-ordered IO of device memory on CUstream `stream` (see FileHandle::read_async).
  StreamIOFuture raw_read_async(nb::handle buf,
                                std::uintptr_t stream,
                                nb::handle size,
                                nb::handle file_offset,
                                nb::handle dev_offset)
  {
    return stream_io(false, buf, stream, size, file_offset, dev_offset);
  }
  StreamIOFuture raw_write_async(nb::handle buf,
                                 std::uintptr_t stream,
                                 nb::handle size,
                                 nb::handle file_offset,
                                 nb::handle dev_offset)
  {
    return stream_io(true, buf, stream, size, file_offset, dev_offset);
  }

  StreamIOFuture stream_io(bool write,
                           nb::handle buf,
                           std::uintptr_t stream,
                           nb::handle size,
                           nb::handle file_offset,
                           nb::handle dev_offset)
  {
    auto view = device_view(buf, /*writable=*/!write, write ? "raw_write_async" : "raw_read_async");
    const std::size_t bo = to_size(dev_offset, "dev_offset");
    const std::size_t n  = request_size(view, size, bo, "dev_offset");
    const off_t off      = to_off_t(to_size(file_offset, "file_offset"), "file_offset");
    auto* ptr            = view.ptr();
    auto* cu_stream      = reinterpret_cast<CUstream>(stream);
    auto handle          = checked();
    StreamFuture future;
    {
      nb::gil_scoped_release release;  // without the stream API this waits for the stream
      future = write ? handle->write_async(ptr, n, off, static_cast<off_t>(bo), cu_stream)
                     : handle->read_async(ptr, n, off, static_cast<off_t>(bo), cu_stream);
    }
    return {std::move(future), std::move(view)};
  }

  /// The handle of an open file, for a batch (kept by the batch's future); ValueError naming
  /// the request when closed.
  [[nodiscard]] std::shared_ptr<FileHandle> for_batch(std::size_t index) const
  {
    if (closed()) {
      throw_closed("batch request " + std::to_string(index) + ": I/O operation on closed file '" +
                   path_ + "'");
    }
    return handle_;
  }

 private:
  /// The buffer of a raw_* call. Those are libkvikio's device-memory calls: a host buffer is
  /// refused (ValueError naming the method, file and buffer) rather than quietly taking
  /// another path; read/write and pread/pwrite are the calls for host memory.
  [[nodiscard]] BufferView device_view(nb::handle buf, bool writable, const char* method) const
  {
    auto view = BufferView::from_object(buf, writable);
    if (!view.is_device()) {
      throw nb::value_error(("CuFile." + std::string(method) + " of '" + path_ +
                             "' takes device memory only (CuPy, Numba or a CUDA DLPack tensor), "
                             "got host memory (" +
                             view.type_name() +
                             "): Non-CUDA buffers not supported; use read/write or "
                             "pread/pwrite for host buffers")
                              .c_str());
    }
    return view;
  }

  /// The handle, shared with the caller for the length of its call (taken with the GIL
  /// held, so close() in another thread cannot pull it away).
  [[nodiscard]] std::shared_ptr<FileHandle> checked() const
  {
    if (closed()) { throw_closed("I/O operation on closed file '" + path_ + "'"); }
    return handle_;
  }
  std::string path_;
  std::shared_ptr<FileHandle> handle_;
};

/// What a batch's IOFuture holds until the IO is done: every buffer and every file.
struct BatchKeepalive {
  std::vector<BufferView> views;
  std::vector<std::shared_ptr<FileHandle>> files;
};

/// pread_batch/pwrite_batch: `requests` is an iterable of (buf[, size[, file_offset]]), with
/// `file` given, or of (file, buf[, size[, file_offset]]). size None: the whole buffer.
IOFuture batch_io(bool write, nb::handle requests, const File* file)
{
  auto keep = std::make_shared<BatchKeepalive>();
  std::vector<FileIORequest> batch;
  std::size_t index = 0;
  for (nb::handle item : requests) {
    const std::string where = "batch request " + std::to_string(index) + ": ";
    if (!PySequence_Check(item.ptr()) || PyUnicode_Check(item.ptr()) || PyBytes_Check(item.ptr())) {
      throw nb::type_error((where + "expected a tuple, got " +
                            nb::cast<std::string>(nb::str(item.type().attr("__name__"))))
                             .c_str());
    }
    const auto len          = static_cast<std::size_t>(nb::len(item));
    const std::size_t first = file == nullptr ? 1 : 0;
    if (len < first + 1 || len > first + 3) {
      throw nb::type_error((where +
                            (file == nullptr ? "expected (file, buf[, size[, file_offset]])"
                                             : "expected (buf[, size[, file_offset]])") +
                            ", got " + std::to_string(len) + " items")
                             .c_str());
    }
    auto at = [&](std::size_t k) {
      return nb::steal(PySequence_GetItem(item.ptr(), static_cast<Py_ssize_t>(k)));
    };
    const File* owner = file;
    nb::object file_obj;
    if (owner == nullptr) {
      file_obj = at(0);
      if (nb::hasattr(file_obj, "_handle")) { file_obj = file_obj.attr("_handle"); }  // CuFile
      if (!nb::isinstance<File>(file_obj)) {
        throw nb::type_error((where + "expected a kvikio.CuFile, got " +
                              nb::cast<std::string>(nb::str(file_obj.type().attr("__name__"))))
                               .c_str());
      }
      owner = &nb::cast<const File&>(file_obj);
    }
    auto handle           = owner->for_batch(index);
    auto view             = BufferView::from_object(at(first), /*writable=*/!write);
    const std::size_t n   = request_size(view, len > first + 1 ? at(first + 1) : nb::none());
    const std::size_t off = len > first + 2 ? to_size(at(first + 2), "file_offset") : 0;
    batch.push_back({handle.get(), view.ptr(), n, off});
    keep->views.push_back(std::move(view));
    keep->files.push_back(std::move(handle));
    ++index;
  }
  std::future<std::size_t> future;
  {
    nb::gil_scoped_release release;
    future = write ? kvikio::pwrite_batch(batch) : kvikio::pread_batch(batch);
  }
  return {std::move(future), BufferView{}, std::move(keep)};
}

}  // namespace

void bind_file(nb::module_& m)
{
  auto cls = nb::class_<File>(m, "FileHandle", "A local file (libkvikio's FileHandle).");
  cls
    .def(nb::init<const std::string&, const std::string&, mode_t, std::optional<CompatMode>>(),
         "path"_a,
         "flags"_a       = "r",
         "mode"_a        = 0644,
         "compat_mode"_a = nb::none())
    .def("close", &File::close)
    .def("fsync", &File::fsync)
    .def_prop_ro("closed", &File::closed)
    .def_prop_ro("path", &File::path)
    .def("fileno", &File::fd)
    .def("open_flags", &File::open_flags)
    .def("nbytes", &File::nbytes)
    .def_prop_ro("compat_mode", &File::compat_mode)
    .def("is_direct_io_supported", &File::is_direct_io_supported);
  // Reads start at offset 0 by default; writes take None: 0, or the end of an "a" file.
  def_parallel_io(cls, "pread", &File::pread, DefaultOffset::ZERO);
  def_parallel_io(cls, "pwrite", &File::pwrite, DefaultOffset::NONE);
  def_parallel_io(cls, "read", &File::read, DefaultOffset::ZERO);
  def_parallel_io(cls, "write", &File::write, DefaultOffset::NONE);
  cls.def(
    "pread_batch",
    [](const File& f, nb::handle requests) { return batch_io(false, requests, &f); },
    "requests"_a);
  cls.def(
    "pwrite_batch",
    [](const File& f, nb::handle requests) { return batch_io(true, requests, &f); },
    "requests"_a);
  m.def(
    "pread_batch",
    [](nb::handle requests) { return batch_io(false, requests, nullptr); },
    "requests"_a);
  m.def(
    "pwrite_batch",
    [](nb::handle requests) { return batch_io(true, requests, nullptr); },
    "requests"_a);
  m.def("batch_backend", [] { return kvikio::batch_backend(); });
  def_raw_io(cls, "raw_read", &File::raw_read, DefaultOffset::ZERO);
  def_raw_io(cls, "raw_write", &File::raw_write, DefaultOffset::NONE);
  for (auto [name, method] : {std::pair{"raw_read_async", &File::raw_read_async},
                              std::pair{"raw_write_async", &File::raw_write_async}}) {
    cls.def(name,
            method,
            "buf"_a,
            "stream"_a,
            "size"_a        = nb::none(),
            "file_offset"_a = 0,
            "dev_offset"_a  = 0);
  }

  // (file or fd, offset, length[, sync_first]): upstream's forms; length 0 means to the end.
  m.def(
    "get_page_cache_info",
    [](const std::string& file, std::size_t offset, std::size_t length) {
      return get_page_cache_info(file, offset, length);
    },
    "file"_a,
    "offset"_a = 0,
    "length"_a = 0,
    nb::call_guard<nb::gil_scoped_release>());
  m.def(
    "get_page_cache_info",
    [](int fd, std::size_t offset, std::size_t length) {
      return get_page_cache_info(fd, offset, length);
    },
    "fd"_a,
    "offset"_a = 0,
    "length"_a = 0,
    nb::call_guard<nb::gil_scoped_release>());
  m.def(
    "drop_file_page_cache",
    [](const std::string& file, std::size_t offset, std::size_t length, bool sync_first) {
      drop_file_page_cache(file, offset, length, sync_first);
    },
    "file"_a,
    "offset"_a     = 0,
    "length"_a     = 0,
    "sync_first"_a = true,
    nb::call_guard<nb::gil_scoped_release>());
  m.def(
    "drop_file_page_cache",
    [](int fd, std::size_t offset, std::size_t length, bool sync_first) {
      drop_file_page_cache(fd, offset, length, sync_first);
    },
    "fd"_a,
    "offset"_a     = 0,
    "length"_a     = 0,
    "sync_first"_a = true,
    nb::call_guard<nb::gil_scoped_release>());
  m.def("drop_system_page_cache",
        &drop_system_page_cache,
        "reclaim_dentries_and_inodes"_a = true,
        "sync_first"_a                  = true,
        nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace kvikio::python
