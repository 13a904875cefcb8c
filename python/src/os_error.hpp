#pragma once
// The exception translation both native modules (_lib and _bench) need.
#include <nanobind/nanobind.h>

#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>

#include <kvikio/error.hpp>

namespace kvikio::python {

/// Raises kvikio.errors.<name>(message): the classes there derive from both the class a
/// Python user expects and the one upstream KvikIO raises (see errors.py). Looked up at
/// each raise, not cached, so that a re-imported package gets its own classes. If the
/// package cannot be imported (half-initialised), `fallback` keeps the message.
inline void set_kvikio_error(const char* name, const std::string& message, PyObject* fallback)
{
  try {
    nanobind::object cls = nanobind::module_::import_("kvikio.errors").attr(name);
    PyErr_SetObject(cls.ptr(), nanobind::str(message.c_str()).ptr());
  } catch (const std::exception&) {
    PyErr_Clear();
    PyErr_SetString(fallback, message.c_str());
  }
}

/// std::system_error (kvikio::GenericSystemError) -> the OSError subclass Python picks from
/// errno (FileNotFoundError, PermissionError, ...) that is also a RuntimeError, through
/// kvikio.errors.os_error.
inline void register_os_error_translator()
{
  nanobind::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const std::system_error& e) {
      try {
        nanobind::object make = nanobind::module_::import_("kvikio.errors").attr("os_error");
        nanobind::object exc  = make(e.code().value(), e.what());
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
      } catch (const std::exception&) {
        PyErr_Clear();
        nanobind::object args = nanobind::make_tuple(e.code().value(), e.what());
        PyErr_SetObject(PyExc_OSError, args.ptr());
      }
    }
  });
}

/// kvikio::EndOfFileError -> kvikio.errors.EndOfFileError; std::invalid_argument ->
/// kvikio.errors.InvalidArgumentError: a ValueError, and the RuntimeError upstream raises for
/// most of these (a write to a read-only file, a bad URL). Registered by _lib only, before
/// the translators of more specific invalid_argument subclasses (UnknownSettingError ->
/// KeyError), which nanobind then tries first: it tries the latest registered first, across
/// modules, so _bench must not register this one.
inline void register_library_error_translator()
{
  nanobind::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const EndOfFileError& e) {
      set_kvikio_error("EndOfFileError", e.what(), PyExc_RuntimeError);
    } catch (const std::invalid_argument& e) {
      set_kvikio_error("InvalidArgumentError", e.what(), PyExc_ValueError);
    }
  });
}

/// Throws kvikio.errors.ClosedFileError (a ValueError and a RuntimeError) with `message`.
[[noreturn]] inline void throw_closed(const std::string& message)
{
  set_kvikio_error("ClosedFileError", message, PyExc_ValueError);
  throw nanobind::python_error();
}

}  // namespace kvikio::python
