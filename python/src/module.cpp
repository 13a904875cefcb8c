// kvikio._lib: the native half of the Python package. It turns Python objects into pointers
// and sizes (checking them against the buffer before any IO), calls libkvikio, releases the
// GIL around everything that may block, and maps C++ exceptions onto Python's. Each area
// registers itself (bindings.hpp); this file holds what is common to all of them.
#include <Python.h>

#include <exception>
#include <system_error>

#include <nanobind/nanobind.h>

#include <kvikio/version.hpp>

#include "bindings.hpp"
#include "os_error.hpp"

namespace nb = nanobind;

NB_MODULE(_lib, m)
{
  using namespace kvikio::python;
  m.doc()               = "Native half of the kvikio package (bindings to the C++ library).";
  m.attr("__version__") = KVIKIO_VERSION_STRING;

  kvikio::python::register_os_error_translator();

  // CompatMode first: the classes below name it in their signatures.
  bind_settings(m);
  bind_future(m);
  bind_buffer(m);
  bind_file(m);
  bind_mmap(m);
  bind_driver(m);
  // Registered after the OSError translator, so remote errors are tried first (nanobind
  // tries the most recently registered translator first).
  bind_remote(m);
}
