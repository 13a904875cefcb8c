#pragma once
// The one exception translation both native modules (_lib and _bench) need.
#include <nanobind/nanobind.h>

#include <exception>
#include <system_error>

namespace kvikio::python {

/// std::system_error (kvikio::GenericSystemError) -> OSError(errno, message): Python picks
/// the subclass from errno (FileNotFoundError, PermissionError, IsADirectoryError, ...).
inline void register_os_error_translator()
{
  nanobind::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const std::system_error& e) {
      nanobind::object args = nanobind::make_tuple(e.code().value(), e.what());
      PyErr_SetObject(PyExc_OSError, args.ptr());
    }
  });
}

}  // namespace kvikio::python
