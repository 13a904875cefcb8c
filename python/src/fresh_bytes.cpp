// kvikio._lib._fresh_bytes: a new bytes object and a writable memoryview of its storage, so
// that kvikio.fsspec can read straight into the bytes it returns (fsspec's cat_file and
// cat_ranges return bytes) instead of reading into a bytearray and copying it. Filling a
// bytes object nobody else has seen yet is what CPython's own readers do in C.
#include <Python.h>

#include <cstddef>

#include <nanobind/nanobind.h>

#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvikio::python {

void bind_fresh_bytes(nb::module_& m)
{
  m.def(
    "_fresh_bytes",
    [](std::size_t n) {
      if (n == 0) { throw nb::value_error("_fresh_bytes: n must be positive"); }
      nb::object bytes = nb::steal(PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n)));
      if (!bytes.is_valid()) { throw nb::python_error(); }
      nb::object view = nb::steal(PyMemoryView_FromMemory(
        PyBytes_AS_STRING(bytes.ptr()), static_cast<Py_ssize_t>(n), PyBUF_WRITE));
      if (!view.is_valid()) { throw nb::python_error(); }
      return nb::make_tuple(bytes, view);
    },
    "n"_a,
    "(bytes, memoryview): n uninitialised bytes and a writable view of them. Internal: the "
    "view does not keep the bytes alive, and the bytes must be filled before anyone else "
    "sees them.");
}

}  // namespace kvikio::python
