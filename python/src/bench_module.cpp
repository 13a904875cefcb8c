// kvikio._bench: the native helpers of the Python benchmarks (kvikio.benchmarks), built on
// the benchmark library (tools/bench) and kept out of the product module kvikio._lib.
#include <Python.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <system_error>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <kvikio/file_handle.hpp>

#include "buffer.hpp"
#include "os_error.hpp"
#include "plain_io.hpp"
#include "timing.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvikio::python {
namespace {

/// The machine's own limit: bench::plain_parallel_io on `fd` from/into the host buffer `buf`.
/// GIL released; returns the seconds taken.
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
  nb::gil_scoped_release release;
  return bench::seconds_of([&] {
    bench::plain_parallel_io(write, fd, base, {size, task_size, threads});
  });
}

/// `iterations` times FileHandle::pread(buf, size, file_offset).get() from C++ on `path`
/// (opened "r" once, before the clock starts), GIL released; returns the seconds taken. The
/// reference for the Python-layer overhead benchmark.
double pread_get_loop(const std::string& path,
                      nb::handle buf,
                      std::size_t size,
                      std::size_t file_offset,
                      std::size_t iterations)
{
  auto view = BufferView::from_object(buf, true);
  if (size > view.nbytes()) { throw nb::value_error("size is larger than the buffer"); }
  void* ptr = view.ptr();
  nb::gil_scoped_release release;
  FileHandle handle(path, "r");
  return bench::seconds_of([&] {
    for (std::size_t i = 0; i < iterations; ++i) {
      handle.pread(ptr, size, file_offset).get();
    }
  });
}

}  // namespace
}  // namespace kvikio::python

NB_MODULE(_bench, m)
{
  m.doc() = "Native helpers of kvikio.benchmarks (not part of the kvikio API).";
  kvikio::python::register_os_error_translator();
  m.def("plain_parallel_io",
        &kvikio::python::plain_parallel_io,
        "write"_a,
        "fd"_a,
        "buf"_a,
        "size"_a,
        "threads"_a,
        "task_size"_a,
        "Move `size` bytes between the open descriptor `fd` and the host buffer `buf` with a "
        "plain parallel pread/pwrite loop (`threads` threads, `task_size` pieces, no kvikio "
        "code); return the seconds taken. OSError when a call fails.");
  m.def("pread_get_loop",
        &kvikio::python::pread_get_loop,
        "path"_a,
        "buf"_a,
        "size"_a,
        "file_offset"_a,
        "iterations"_a,
        "Open `path` with kvikio::FileHandle and run pread(buf, size, file_offset).get() "
        "`iterations` times from C++; return the seconds the loop took.");
}
