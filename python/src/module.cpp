// kvikio._lib: the native half of the Python package. It turns Python objects into pointers
// and sizes (checking them against the buffer before any IO), calls libkvikio, releases the
// GIL around everything that may block, and maps C++ exceptions onto Python's.
#include <Python.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/buffer.hpp>
#include <kvikio/compat_mode.hpp>
#include <kvikio/cufile/driver.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/hdfs.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/remote_handle.hpp>
#include <kvikio/stream.hpp>
#include <kvikio/version.hpp>

#include "buffer.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvikio::python {
namespace {

std::string repr_of(nb::handle v) { return nb::cast<std::string>(nb::repr(v)); }

/// A non-negative integer argument. Negative values raise OverflowError naming the argument
/// and the value (they cannot be an offset or size); non-integers raise TypeError.
std::size_t to_size(nb::handle value, const char* what)
{
  if (PyLong_CheckExact(value.ptr()) == 0 && PyIndex_Check(value.ptr()) == 0) {
    throw nb::type_error(
      (std::string(what) + " must be an integer, got " + repr_of(value)).c_str());
  }
  nb::object index = nb::steal(PyNumber_Index(value.ptr()));
  if (!index.is_valid()) { throw nb::python_error(); }
  int overflow = 0;
  long long v  = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred() != nullptr) { throw nb::python_error(); }
  if (overflow < 0 || v < 0) {
    throw std::overflow_error(std::string(what) + " must not be negative, got " + repr_of(value));
  }
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(index.ptr());
    if (PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      throw std::overflow_error(std::string(what) + " " + repr_of(value) + " is too large");
    }
    return static_cast<std::size_t>(u);
  }
  return static_cast<std::size_t>(v);
}

std::optional<std::size_t> to_opt_size(nb::handle value, const char* what)
{
  if (value.is_none()) { return std::nullopt; }
  return to_size(value, what);
}

/// The byte count of a request: `size`, or the whole buffer; checked against the buffer.
std::size_t request_size(const BufferView& view,
                         nb::handle size,
                         std::size_t buf_offset  = 0,
                         const char* offset_name = nullptr)
{
  auto n = to_opt_size(size, "size");
  if (buf_offset > view.nbytes()) {
    throw nb::value_error((std::string(offset_name) + " " + std::to_string(buf_offset) +
                           " is beyond the end of the " + std::to_string(view.nbytes()) + "-byte " +
                           view.type_name() + " buffer")
                            .c_str());
  }
  const std::size_t room = view.nbytes() - buf_offset;
  if (!n) { return room; }
  if (*n > room) {
    std::string where = offset_name == nullptr
                          ? ""
                          : " after " + std::string(offset_name) + " " + std::to_string(buf_offset);
    throw nb::value_error(("size " + std::to_string(*n) + " is larger than the " +
                           std::to_string(room) + " bytes of the " + view.type_name() + " buffer" +
                           where)
                            .c_str());
  }
  return *n;
}

/// The result of a non-blocking read or write. Holds the buffer until the IO is done; if
/// dropped before get(), the destructor waits for the IO so that no task writes into freed
/// memory.
class IOFuture {
 public:
  /// `keepalive`: what the IO reads from or writes to besides the buffer (a mapping), held
  /// until the IO is done.
  IOFuture(std::future<std::size_t> future,
           BufferView view,
           std::shared_ptr<void> keepalive = nullptr)
    : future_(std::move(future)), view_(std::move(view)), keepalive_(std::move(keepalive))
  {
  }
  IOFuture(IOFuture&&)            = default;
  IOFuture& operator=(IOFuture&&) = delete;
  IOFuture(const IOFuture&)       = delete;
  ~IOFuture()
  {
    if (future_.valid()) {
      nb::gil_scoped_release release;
      future_.wait();
    }
  }

  /// Waits for the IO (GIL released); returns the bytes moved or raises the first failure.
  std::size_t get()
  {
    if (!future_.valid()) {
      throw kvikio::Error("IOFuture.get() was already called (it returned " +
                          std::to_string(result_) + " bytes)");
    }
    std::size_t n = 0;
    try {
      nb::gil_scoped_release release;
      n = future_.get();
    } catch (...) {
      view_ = BufferView{};
      throw;
    }
    view_ = BufferView{};
    keepalive_.reset();
    result_ = n;
    return n;
  }

  [[nodiscard]] bool done() const
  {
    return !future_.valid() ||
           future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

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
  StreamIOFuture(StreamFuture future, BufferView view)
    : view_(std::move(view)), future_(std::move(future))
  {
  }
  /// Waits for the stream (GIL released); returns the bytes moved or raises the failure.
  std::size_t check_bytes_done()
  {
    nb::gil_scoped_release release;
    return future_.check_bytes_done();
  }

 private:
  BufferView view_;  // destroyed after future_, which may still wait on the stream
  StreamFuture future_;
};

off_t to_off_t(std::size_t v, const char* what)
{
  if (v > static_cast<std::size_t>(std::numeric_limits<off_t>::max())) {
    throw std::overflow_error(std::string(what) + " " + std::to_string(v) + " is too large");
  }
  return static_cast<off_t>(v);
}

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

  /// Drops this object's hold on the file. A blocking call running in another thread keeps
  /// its own hold, so the file is closed when that call returns, never under it.
  void close() noexcept { handle_.reset(); }
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
    const std::size_t ts =
      task_size.is_none() ? defaults::task_size() : to_size(task_size, "task_size");
    auto future = checked()->pread(view.ptr(), n, off, ts);
    return {std::move(future), std::move(view)};
  }

  IOFuture pwrite(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    auto view           = BufferView::from_object(buf, /*writable=*/false);
    const std::size_t n = request_size(view, size);
    const std::size_t off =
      file_offset.is_none() ? unspecified_offset : to_size(file_offset, "file_offset");
    const std::size_t ts =
      task_size.is_none() ? defaults::task_size() : to_size(task_size, "task_size");
    auto future = checked()->pwrite(view.ptr(), n, off, ts);
    return {std::move(future), std::move(view)};
  }

  std::size_t read(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    return pread(buf, size, file_offset, task_size).get();
  }

  std::size_t write(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    return pwrite(buf, size, file_offset, task_size).get();
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

  /// `iterations` times pread(buf, size, file_offset).get() from C++, GIL released; returns
  /// the seconds taken. The reference for the Python-layer overhead benchmark.
  double pread_get_loop(nb::handle buf,
                        std::size_t size,
                        std::size_t file_offset,
                        std::size_t iterations)
  {
    auto view = BufferView::from_object(buf, true);
    if (size > view.nbytes()) { throw nb::value_error("size is larger than the buffer"); }
    auto handle = checked();
    nb::gil_scoped_release release;
    auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < iterations; ++i) {
      handle->pread(view.ptr(), size, file_offset).get();
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
                             "): use read/write or pread/pwrite for host buffers")
                              .c_str());
    }
    return view;
  }

  /// The handle, shared with the caller for the length of its call (taken with the GIL
  /// held, so close() in another thread cannot pull it away).
  [[nodiscard]] std::shared_ptr<FileHandle> checked() const
  {
    if (closed()) {
      throw nb::value_error(("I/O operation on closed file '" + path_ + "'").c_str());
    }
    return handle_;
  }
  std::string path_;
  std::shared_ptr<FileHandle> handle_;
};

class Mmap {
 public:
  Mmap(const std::string& path,
       const std::string& flags,
       nb::handle initial_map_size,
       nb::handle initial_map_offset,
       mode_t mode,
       std::optional<int> map_flags)
    : path_(path)
  {
    auto size   = to_opt_size(initial_map_size, "initial_map_size");
    auto offset = to_size(initial_map_offset, "initial_map_offset");
    auto handle = std::make_shared<MmapHandle>();
    {
      nb::gil_scoped_release release;
      *handle = MmapHandle(path, flags, size, offset, mode, map_flags);
    }
    handle_ = std::move(handle);
  }
  /// Drops this object's hold on the mapping: it is unmapped once no read (blocking, or a
  /// pread's IOFuture) uses it any more.
  void close() noexcept { handle_.reset(); }
  [[nodiscard]] bool closed() const noexcept { return !handle_ || handle_->closed(); }
  [[nodiscard]] std::size_t file_size() const { return checked()->file_size(); }
  [[nodiscard]] std::size_t initial_map_size() const { return checked()->initial_map_size(); }
  [[nodiscard]] std::size_t initial_map_offset() const { return checked()->initial_map_offset(); }

  std::size_t read(nb::handle buf, nb::handle size, nb::handle offset)
  {
    auto view     = BufferView::from_object(buf, true);
    auto handle   = checked();
    auto [n, off] = checked_range(*handle, view, size, offset);
    nb::gil_scoped_release release;
    return handle->read(view.ptr(), n, off);
  }

  IOFuture pread(nb::handle buf, nb::handle size, nb::handle offset, nb::handle task_size)
  {
    auto view     = BufferView::from_object(buf, true);
    auto handle   = checked();
    auto [n, off] = checked_range(*handle, view, size, offset);
    const std::size_t ts =
      task_size.is_none() ? defaults::task_size() : to_size(task_size, "task_size");
    auto future = handle->pread(view.ptr(), n, off, ts);
    // The tasks read from the mapping: the future keeps it mapped until they are done.
    return {std::move(future), std::move(view), std::move(handle)};
  }

 private:
  /// (bytes, offset) of a read: `size`, or from `offset` to the end of the mapped range; a
  /// size larger than the buffer is a ValueError, a range outside the mapping an IndexError
  /// (raised by the C++ call).
  static std::pair<std::optional<std::size_t>, std::size_t> checked_range(const MmapHandle& handle,
                                                                          const BufferView& view,
                                                                          nb::handle size,
                                                                          nb::handle offset)
  {
    auto n                    = to_opt_size(size, "size");
    const auto off            = to_size(offset, "offset");
    const std::size_t begin   = handle.initial_map_offset();
    const std::size_t map_end = begin + handle.initial_map_size();
    std::size_t bytes         = n.value_or(off >= begin && off <= map_end ? map_end - off : 0);
    if (bytes > view.nbytes()) {
      throw nb::value_error(("mmap read of " + std::to_string(bytes) + " bytes does not fit the " +
                             std::to_string(view.nbytes()) + "-byte " + view.type_name() +
                             " buffer")
                              .c_str());
    }
    return {n, off};
  }
  [[nodiscard]] std::shared_ptr<MmapHandle> checked() const
  {
    if (closed()) {
      throw nb::value_error(("I/O operation on closed mapping of '" + path_ + "'").c_str());
    }
    return handle_;
  }
  std::string path_;
  std::shared_ptr<MmapHandle> handle_;
};

// ---- remote files (RemoteHandle) ----

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

  /// Drops this object's hold on the handle; reads already queued keep theirs.
  void close() noexcept { handle_.reset(); }
  [[nodiscard]] bool closed() const noexcept { return !handle_; }
  [[nodiscard]] std::size_t nbytes() const noexcept { return nbytes_; }
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
    const std::size_t ts =
      task_size.is_none() ? defaults::task_size() : to_size(task_size, "task_size");
    // pread checks the range and returns at once; the transfers run on the pool.
    auto future = handle->pread(view.ptr(), n, off, ts);
    return {std::move(future), std::move(view), std::move(handle)};
  }

  std::size_t read(nb::handle buf, nb::handle size, nb::handle file_offset, nb::handle task_size)
  {
    return pread(buf, size, file_offset, task_size).get();
  }

 private:
  [[nodiscard]] std::shared_ptr<RemoteHandle> checked() const
  {
    if (!handle_) { throw nb::value_error("I/O operation on a closed RemoteFile"); }
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

// ---- settings, by their Python names ----

[[noreturn]] void bad_setting(const std::string& key, nb::handle value, const char* expected)
{
  throw nb::value_error(
    ("invalid value " + repr_of(value) + " for setting '" + key + "': expected " + expected)
      .c_str());
}

std::size_t setting_int(const std::string& key, nb::handle value, const char* expected)
{
  if (PyBool_Check(value.ptr()) != 0 || PyIndex_Check(value.ptr()) == 0) {
    bad_setting(key, value, expected);
  }
  try {
    return to_size(value, key.c_str());
  } catch (const std::overflow_error&) {
    bad_setting(key, value, expected);
  }
}

bool setting_bool(const std::string& key, nb::handle value)
{
  if (PyBool_Check(value.ptr()) != 0) { return value.ptr() == Py_True; }
  if (PyLong_Check(value.ptr()) != 0) {
    auto v = PyLong_AsLong(value.ptr());
    if (v == 0 || v == 1) { return v == 1; }
  }
  bad_setting(key, value, "True or False");
}

const std::vector<std::string>& setting_names()
{
  static const std::vector<std::string> names{"compat_mode",
                                              "num_threads",
                                              "task_size",
                                              "gds_threshold",
                                              "bounce_buffer_size",
                                              "auto_direct_io_read",
                                              "auto_direct_io_write",
                                              "http_max_attempts",
                                              "http_status_codes",
                                              "http_timeout"};
  return names;
}

[[noreturn]] void unknown_setting(const std::string& key)
{
  std::string known;
  for (const auto& n : setting_names()) {
    known += (known.empty() ? "" : ", ") + n;
  }
  throw nb::key_error(("unknown setting '" + key + "' (known: " + known + ")").c_str());
}

nb::object defaults_get(const std::string& key)
{
  if (key == "compat_mode") { return nb::cast(defaults::compat_mode()); }
  if (key == "num_threads") { return nb::cast(defaults::num_threads()); }
  if (key == "task_size") { return nb::cast(defaults::task_size()); }
  if (key == "gds_threshold") { return nb::cast(defaults::gds_threshold()); }
  if (key == "bounce_buffer_size") { return nb::cast(defaults::bounce_buffer_size()); }
  if (key == "auto_direct_io_read") { return nb::cast(defaults::auto_direct_io_read()); }
  if (key == "auto_direct_io_write") { return nb::cast(defaults::auto_direct_io_write()); }
  if (key == "http_max_attempts") { return nb::cast(defaults::http_max_attempts()); }
  if (key == "http_status_codes") { return nb::cast(defaults::http_status_codes()); }
  if (key == "http_timeout") { return nb::cast(defaults::http_timeout()); }
  unknown_setting(key);
}

void defaults_set(const std::string& key, nb::handle value)
{
  if (key == "compat_mode") {
    CompatMode mode{};
    if (nb::isinstance<CompatMode>(value)) {
      mode = nb::cast<CompatMode>(value);
    } else if (nb::isinstance<nb::str>(value)) {
      try {
        mode = parse_compat_mode_str(nb::cast<std::string>(value));
      } catch (const std::invalid_argument&) {
        bad_setting(key, value, "a CompatMode or one of 'ON', 'OFF', 'AUTO'");
      }
    } else {
      bad_setting(key, value, "a CompatMode or one of 'ON', 'OFF', 'AUTO'");
    }
    defaults::set_compat_mode(mode);
    return;
  }
  if (key == "num_threads") {
    auto n = setting_int(key, value, "a positive integer");
    if (n == 0 || n > 4096) { bad_setting(key, value, "a positive integer (at most 4096)"); }
    nb::gil_scoped_release release;  // resizing waits for queued IO
    defaults::set_num_threads(static_cast<unsigned int>(n));
    return;
  }
  if (key == "task_size" || key == "bounce_buffer_size") {
    auto n = setting_int(key, value, "a positive integer");
    if (n == 0) { bad_setting(key, value, "a positive integer"); }
    key == "task_size" ? defaults::set_task_size(n) : defaults::set_bounce_buffer_size(n);
    return;
  }
  if (key == "gds_threshold") {
    defaults::set_gds_threshold(setting_int(key, value, "a non-negative integer"));
    return;
  }
  if (key == "auto_direct_io_read") {
    return defaults::set_auto_direct_io_read(setting_bool(key, value));
  }
  if (key == "auto_direct_io_write") {
    return defaults::set_auto_direct_io_write(setting_bool(key, value));
  }
  if (key == "http_max_attempts") {
    auto n = setting_int(key, value, "a positive integer");
    if (n == 0) { bad_setting(key, value, "a positive integer"); }
    return defaults::set_http_max_attempts(n);
  }
  if (key == "http_timeout") {
    auto n = setting_int(key, value, "a positive number of seconds");
    if (n == 0 || n > static_cast<std::size_t>(std::numeric_limits<long>::max())) {
      bad_setting(key, value, "a positive number of seconds");
    }
    return defaults::set_http_timeout(static_cast<long>(n));
  }
  if (key == "http_status_codes") {
    std::vector<int> codes;
    if (nb::isinstance<nb::str>(value) || PyIndex_Check(value.ptr()) != 0) {
      bad_setting(key, value, "a list of HTTP status codes");
    }
    try {
      for (auto item : value) {
        if (PyBool_Check(item.ptr()) != 0 || PyIndex_Check(item.ptr()) == 0) {
          bad_setting(key, value, "a list of HTTP status codes");
        }
        auto code = nb::cast<long>(item);
        if (code < 100 || code > 599) {
          bad_setting(key, value, "a list of HTTP status codes (100-599)");
        }
        codes.push_back(static_cast<int>(code));
      }
    } catch (const nb::python_error&) {
      bad_setting(key, value, "a list of HTTP status codes");
    } catch (const nb::cast_error&) {
      bad_setting(key, value, "a list of HTTP status codes");
    }
    if (codes.empty()) { bad_setting(key, value, "a non-empty list of HTTP status codes"); }
    return defaults::set_http_status_codes(std::move(codes));
  }
  unknown_setting(key);
}

// ---- cuFile driver properties, by name ----

/// The property as an integer (flags as 0 or 1; Python turns them back into bool).
std::size_t driver_get(const std::string& name)
{
  auto value = cufile_driver::get(name);
  if (const bool* flag = std::get_if<bool>(&value)) { return *flag ? 1 : 0; }
  return std::get<std::size_t>(value);
}

/// `is_bool`: the property is a flag, given as 0 or 1.
void driver_set(const std::string& name, std::size_t value, bool is_bool)
{
  cufile_driver::set(name,
                     is_bool ? cufile_driver::Value{value != 0} : cufile_driver::Value{value});
}

// ---- benchmark helper: the machine's own limit ----

/// `threads` plain threads taking `task_size` pieces off a shared counter, each moved with one
/// pread/pwrite loop: no library code involved. Returns the seconds taken.
double plain_parallel_io(
  bool write, int fd, nb::handle buf, std::size_t size, unsigned threads, std::size_t task_size)
{
  auto view = BufferView::from_object(buf, !write);
  if (view.is_device()) { throw nb::value_error("the plain loop needs host memory"); }
  if (size > view.nbytes()) { throw nb::value_error("size is larger than the buffer"); }
  if (task_size == 0 || threads == 0) {
    throw nb::value_error("threads and task_size must be positive");
  }
  char* base = static_cast<char*>(view.ptr());
  std::atomic<std::size_t> next{0};
  std::atomic<int> error{0};
  nb::gil_scoped_release release;
  auto t0     = std::chrono::steady_clock::now();
  auto worker = [&] {
    while (error == 0) {
      std::size_t begin = next.fetch_add(task_size);
      if (begin >= size) { return; }
      std::size_t end = std::min(size, begin + task_size);
      for (std::size_t pos = begin; pos < end;) {
        ssize_t n = write ? ::pwrite(fd, base + pos, end - pos, static_cast<off_t>(pos))
                          : ::pread(fd, base + pos, end - pos, static_cast<off_t>(pos));
        if (n <= 0) {
          if (n < 0 && errno == EINTR) { continue; }
          error = n < 0 ? errno : EIO;
          return;
        }
        pos += static_cast<std::size_t>(n);
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i) {
    pool.emplace_back(worker);
  }
  for (auto& t : pool) {
    t.join();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (error != 0) {
    throw GenericSystemError(error, "plain parallel loop on fd " + std::to_string(fd) + " failed");
  }
  return seconds;
}

}  // namespace
}  // namespace kvikio::python

NB_MODULE(_lib, m)
{
  using namespace kvikio;
  using namespace kvikio::python;
  m.doc()               = "Native half of the kvikio package (bindings to the C++ library).";
  m.attr("__version__") = KVIKIO_VERSION_STRING;

  // std::system_error (kvikio::GenericSystemError) -> OSError(errno, message): Python picks
  // the subclass from errno (FileNotFoundError, PermissionError, IsADirectoryError, ...).
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const std::system_error& e) {
      nb::object args = nb::make_tuple(e.code().value(), e.what());
      PyErr_SetObject(PyExc_OSError, args.ptr());
    }
  });

  nb::enum_<CompatMode>(
    m, "CompatMode", "How IO reaches storage: OFF (cuFile only), ON (POSIX only), AUTO.")
    .value("OFF", CompatMode::OFF)
    .value("ON", CompatMode::ON)
    .value("AUTO", CompatMode::AUTO);

  nb::class_<IOFuture>(m, "IOFuture", "The result of a non-blocking read or write.")
    .def("get",
         &IOFuture::get,
         "Wait for the IO (GIL released); return the bytes moved or raise its error.")
    .def("done", &IOFuture::done, "True when the IO has finished.");

  nb::class_<StreamIOFuture>(m,
                             "StreamIOFuture",
                             "The result of a stream-ordered read/write (raw_read_async, "
                             "raw_write_async): check_bytes_done() waits for the stream and "
                             "returns the bytes moved or raises the IO's error.")
    .def("check_bytes_done", &StreamIOFuture::check_bytes_done);

  auto file_class = nb::class_<File>(m, "FileHandle", "A local file (libkvikio's FileHandle).");
  file_class
    .def(nb::init<const std::string&, const std::string&, mode_t, std::optional<CompatMode>>(),
         "path"_a,
         "flags"_a       = "r",
         "mode"_a        = 0644,
         "compat_mode"_a = nb::none())
    .def("close", &File::close)
    .def_prop_ro("closed", &File::closed)
    .def_prop_ro("path", &File::path)
    .def("fileno", &File::fd)
    .def("open_flags", &File::open_flags)
    .def("nbytes", &File::nbytes)
    .def_prop_ro("compat_mode", &File::compat_mode)
    .def("is_direct_io_supported", &File::is_direct_io_supported)
    .def("pread",
         &File::pread,
         "buf"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = 0,
         "task_size"_a   = nb::none())
    .def("pwrite",
         &File::pwrite,
         "buf"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = nb::none(),
         "task_size"_a   = nb::none())
    .def("read",
         &File::read,
         "buf"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = 0,
         "task_size"_a   = nb::none())
    .def("write",
         &File::write,
         "buf"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = nb::none(),
         "task_size"_a   = nb::none())
    .def("raw_read",
         &File::raw_read,
         "buf"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = 0,
         "dev_offset"_a  = 0)
    .def("raw_write",
         &File::raw_write,
         "buf"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = nb::none(),
         "dev_offset"_a  = 0)
    .def(
      "_pread_get_loop", &File::pread_get_loop, "buf"_a, "size"_a, "file_offset"_a, "iterations"_a);

  file_class
    .def("raw_read_async",
         &File::raw_read_async,
         "buf"_a,
         "stream"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = 0,
         "dev_offset"_a  = 0)
    .def("raw_write_async",
         &File::raw_write_async,
         "buf"_a,
         "stream"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = 0,
         "dev_offset"_a  = 0);

  nb::class_<Mmap>(m, "MmapHandle", "A read-only memory map of a file (libkvikio's MmapHandle).")
    .def(nb::init<const std::string&,
                  const std::string&,
                  nb::handle,
                  nb::handle,
                  mode_t,
                  std::optional<int>>(),
         "path"_a,
         "flags"_a              = "r",
         "initial_map_size"_a   = nb::none(),
         "initial_map_offset"_a = 0,
         "mode"_a               = 0644,
         "map_flags"_a          = nb::none())
    .def("close", &Mmap::close)
    .def_prop_ro("closed", &Mmap::closed)
    .def("file_size", &Mmap::file_size)
    .def("initial_map_size", &Mmap::initial_map_size)
    .def("initial_map_offset", &Mmap::initial_map_offset)
    .def("read", &Mmap::read, "buf"_a, "size"_a = nb::none(), "offset"_a = 0)
    .def("pread",
         &Mmap::pread,
         "buf"_a,
         "size"_a      = nb::none(),
         "offset"_a    = 0,
         "task_size"_a = nb::none());

  m.def("defaults_get", &defaults_get, "key"_a);
  m.def("defaults_set", &defaults_set, "key"_a, "value"_a);
  m.def("defaults_keys", &setting_names);

  m.def("get_page_cache_info",
        nb::overload_cast<const std::string&>(&get_page_cache_info),
        "file"_a,
        nb::call_guard<nb::gil_scoped_release>());
  m.def("get_page_cache_info",
        nb::overload_cast<int>(&get_page_cache_info),
        "fd"_a,
        nb::call_guard<nb::gil_scoped_release>());
  m.def("drop_file_page_cache",
        nb::overload_cast<const std::string&, bool>(&drop_file_page_cache),
        "file"_a,
        "sync_first"_a = true,
        nb::call_guard<nb::gil_scoped_release>());
  m.def("drop_file_page_cache",
        nb::overload_cast<int, bool>(&drop_file_page_cache),
        "fd"_a,
        "sync_first"_a = true,
        nb::call_guard<nb::gil_scoped_release>());
  m.def("drop_system_page_cache",
        &drop_system_page_cache,
        "reclaim_dentries_and_inodes"_a = true,
        "sync_first"_a                  = true,
        nb::call_guard<nb::gil_scoped_release>());

  m.def(
    "memory_register",
    [](nb::handle buf) {
      auto view = BufferView::from_object(buf, false);
      kvikio::memory_register(view.ptr());
    },
    "buf"_a);
  m.def(
    "memory_deregister",
    [](nb::handle buf) {
      auto view = BufferView::from_object(buf, false);
      kvikio::memory_deregister(view.ptr());
    },
    "buf"_a);
  // `stream` is a CUstream handle (an integer in Python).
  m.def(
    "stream_register",
    [](std::uintptr_t stream, unsigned int flags) {
      kvikio::stream_register(reinterpret_cast<CUstream>(stream), flags);
    },
    "stream"_a,
    "flags"_a);
  m.def(
    "stream_deregister",
    [](std::uintptr_t stream) { kvikio::stream_deregister(reinterpret_cast<CUstream>(stream)); },
    "stream"_a);
  m.def(
    "bounce_buffer_free", &kvikio::bounce_buffer_free, nb::call_guard<nb::gil_scoped_release>());
  m.def("driver_is_gds_available", [] { return DriverProperties{}.is_gds_available(); });
  m.def("driver_get", &driver_get, "name"_a);
  m.def("driver_set", &driver_set, "name"_a, "value"_a, "is_bool"_a);
  m.def(
    "is_device_buffer",
    [](nb::handle buf) { return BufferView::from_object(buf, false).is_device(); },
    "buf"_a);

  // ---- remote files ----
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
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
  nb::class_<Remote>(m, "RemoteFile", "A remote file (libkvikio's RemoteHandle).")
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
         OptStr token) {
        return Remote::make(
          [&] {
            return std::make_unique<S3Endpoint>(
              std::make_pair(bucket, object), region, key, secret, endpoint_url, token);
          },
          nbytes);
      },
      "bucket_name"_a,
      "object_name"_a,
      "nbytes"_a                = nb::none(),
      "aws_region"_a            = nb::none(),
      "aws_access_key_id"_a     = nb::none(),
      "aws_secret_access_key"_a = nb::none(),
      "aws_endpoint_url"_a      = nb::none(),
      "aws_session_token"_a     = nb::none())
    .def_static(
      "open_s3_from_http_url",
      [](const std::string& url,
         nb::handle nbytes,
         OptStr region,
         OptStr key,
         OptStr secret,
         OptStr token) {
        return Remote::make(
          [&] { return std::make_unique<S3Endpoint>(url, region, key, secret, token); }, nbytes);
      },
      "url"_a,
      "nbytes"_a                = nb::none(),
      "aws_region"_a            = nb::none(),
      "aws_access_key_id"_a     = nb::none(),
      "aws_secret_access_key"_a = nb::none(),
      "aws_session_token"_a     = nb::none())
    .def_static(
      "open_s3_from_s3_url",
      [](const std::string& url,
         nb::handle nbytes,
         OptStr region,
         OptStr key,
         OptStr secret,
         OptStr endpoint_url,
         OptStr token) {
        return Remote::make(
          [&] {
            return std::make_unique<S3Endpoint>(
              S3Endpoint::parse_s3_url(url), region, key, secret, endpoint_url, token);
          },
          nbytes);
      },
      "url"_a,
      "nbytes"_a                = nb::none(),
      "aws_region"_a            = nb::none(),
      "aws_access_key_id"_a     = nb::none(),
      "aws_secret_access_key"_a = nb::none(),
      "aws_endpoint_url"_a      = nb::none(),
      "aws_session_token"_a     = nb::none())
    .def_static(
      "open_s3_public",
      [](const std::string& url, nb::handle nbytes) {
        return Remote::make([&] { return std::make_unique<S3PublicEndpoint>(url); }, nbytes);
      },
      "url"_a,
      "nbytes"_a = nb::none())
    .def_static(
      "open_s3_presigned_url",
      [](const std::string& url, nb::handle nbytes) {
        return Remote::make([&] { return std::make_unique<S3EndpointWithPresignedUrl>(url); },
                            nbytes);
      },
      "presigned_url"_a,
      "nbytes"_a = nb::none())
    .def_static(
      "open_webhdfs",
      [](const std::string& url, nb::handle nbytes) {
        return Remote::make([&] { return std::make_unique<WebHdfsEndpoint>(url); }, nbytes);
      },
      "url"_a,
      "nbytes"_a = nb::none())
    .def_static("open",
                &Remote::open,
                "url"_a,
                "remote_endpoint_type"_a = RemoteEndpointType::AUTO,
                "allow_list"_a           = nb::none(),
                "nbytes"_a               = nb::none())
    .def("close", &Remote::close)
    .def_prop_ro("closed", &Remote::closed)
    .def("nbytes", &Remote::nbytes)
    .def("remote_endpoint_type", &Remote::remote_endpoint_type)
    .def("__str__", &Remote::str)
    .def("pread",
         &Remote::pread,
         "buf"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = 0,
         "task_size"_a   = nb::none())
    .def("read",
         &Remote::read,
         "buf"_a,
         "size"_a        = nb::none(),
         "file_offset"_a = 0,
         "task_size"_a   = nb::none());
  m.def(
    "redact_url", [](const std::string& url) { return redact_url(url); }, "url"_a);

  m.def("_plain_parallel_io",
        &plain_parallel_io,
        "write"_a,
        "fd"_a,
        "buf"_a,
        "size"_a,
        "threads"_a,
        "task_size"_a);
}
