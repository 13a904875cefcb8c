// kvikio._lib: the native half of the Python package. It turns Python objects into pointers
// and sizes (checking them against the buffer before any IO), calls libkvikio, releases the
// GIL around everything that may block, and maps C++ exceptions onto Python's. Each area
// registers itself (bindings.hpp); this file holds what is common to all of them.
#include <Python.h>

#include <exception>
#include <string>
#include <system_error>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <kvikio/version.hpp>

#include "bindings.hpp"
#include "os_error.hpp"

namespace nb = nanobind;

namespace {

/// The module first made in this process, kept alive for good (see NB_MODULE below).
PyObject* first_module = nullptr;

/// Gives `m` the contents of the first module: its classes, enums and functions.
void copy_first_module(nb::module_& m)
{
  nb::handle first_dict(PyModule_GetDict(first_module));
  for (auto [key, value] : nb::borrow<nb::dict>(first_dict)) {
    const auto name = nb::cast<std::string>(key);
    // The import system has set the new module's own identity attributes.
    if (name == "__name__" || name == "__spec__" || name == "__loader__" || name == "__file__" ||
        name == "__package__") {
      continue;
    }
    m.attr(key) = value;
  }
}

}  // namespace

NB_MODULE(_lib, m)
{
  using namespace kvikio::python;
  // Importing again after `del sys.modules["kvikio._lib"]` (importlib.reload, test runners,
  // notebooks) runs this again in the same process. nanobind's types and enums are registered
  // process-wide, once: registering them again aborts. So a later import gets the first
  // module's objects, and the C++ state behind them stays one.
  if (first_module != nullptr) {
    copy_first_module(m);
    return;
  }
  first_module = m.ptr();
  Py_INCREF(first_module);
  m.doc()               = "Native half of the kvikio package (bindings to the C++ library).";
  m.attr("__version__") = KVIKIO_VERSION_STRING;

  kvikio::python::register_library_error_translator();
  kvikio::python::register_os_error_translator();

  // CompatMode first: the classes below name it in their signatures.
  bind_settings(m);
  bind_future(m);
  bind_future_await(m);
  bind_buffer(m);
  bind_file(m);
  bind_mmap(m);
  bind_driver(m);
  bind_log(m);
  bind_fresh_bytes(m);
  // Registered after the OSError translator, so remote errors are tried first (nanobind
  // tries the most recently registered translator first).
  bind_remote(m);
}
