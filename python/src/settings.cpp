// kvikio._lib's settings: the C++ library's name-keyed defaults::get/set, with Python values.
// The table of settings (names, types, ranges, environment variables) lives in the library
// (src/core/settings.cpp); nothing here knows a setting by name.
#include <Python.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <kvikio/compat_mode.hpp>
#include <kvikio/defaults.hpp>

#include "args.hpp"
#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvikio::python {
namespace {

/// An integer (anything with __index__, such as a NumPy integer, but not a bool) that fits
/// 64 bits, else nothing.
std::optional<std::int64_t> to_int64(nb::handle v)
{
  if (PyBool_Check(v.ptr()) != 0 || PyIndex_Check(v.ptr()) == 0) { return std::nullopt; }
  nb::object index = nb::steal(PyNumber_Index(v.ptr()));
  if (!index.is_valid()) {
    PyErr_Clear();
    return std::nullopt;
  }
  int overflow = 0;
  const auto n = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) { return std::nullopt; }
  return n;
}

/// The Python value as the library's SettingValue: a bool, a CompatMode, a str, an integer or
/// an iterable of integers. What has no counterpart (a float, an int beyond 64 bits, a list
/// of non-integers) goes as its repr, which the table then rejects with a message naming the
/// setting and the value.
SettingValue to_value(nb::handle v)
{
  if (PyBool_Check(v.ptr()) != 0) { return v.ptr() == Py_True; }
  if (nb::isinstance<CompatMode>(v)) { return nb::cast<CompatMode>(v); }
  if (nb::isinstance<nb::str>(v)) { return nb::cast<std::string>(v); }
  if (auto n = to_int64(v)) { return *n; }
  nb::object iter = nb::steal(PyObject_GetIter(v.ptr()));
  if (!iter.is_valid()) {
    PyErr_Clear();
    return repr_of(v);
  }
  std::vector<std::int64_t> items;
  while (nb::object item = nb::steal(PyIter_Next(iter.ptr()))) {
    auto n = to_int64(item);
    if (!n) { return repr_of(v); }
    items.push_back(*n);
  }
  if (PyErr_Occurred() != nullptr) { throw nb::python_error(); }
  return items;
}

nb::object to_python(const SettingValue& value)
{
  return std::visit([](const auto& v) -> nb::object { return nb::cast(v); }, value);
}

}  // namespace

void bind_settings(nb::module_& m)
{
  nb::enum_<CompatMode>(
    m, "CompatMode", "How IO reaches storage: OFF (cuFile only), ON (POSIX only), AUTO.")
    .value("OFF", CompatMode::OFF)
    .value("ON", CompatMode::ON)
    .value("AUTO", CompatMode::AUTO);

  // An unknown setting is a KeyError in Python (a mapping-like API), ValueError otherwise.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const UnknownSettingError& e) {
      PyErr_SetString(PyExc_KeyError, e.what());
    }
  });

  m.def("defaults_keys", &defaults::names, "The names of every setting.");
  m.def(
    "defaults_get", [](const std::string& key) { return to_python(defaults::get(key)); }, "key"_a);
  m.def(
    "defaults_set",
    [](const std::string& key, nb::handle value) {
      auto v = to_value(value);
      nb::gil_scoped_release release;  // setting num_threads waits for queued IO
      defaults::set(key, v);
    },
    "key"_a,
    "value"_a);
  m.def("is_compat_mode_preferred",
        nb::overload_cast<>(&defaults::is_compat_mode_preferred),
        "True when files opened now use POSIX IO rather than cuFile (decided by the library).");
  m.def("is_compat_mode_preferred",
        nb::overload_cast<CompatMode>(&defaults::is_compat_mode_preferred),
        "mode"_a);
}

}  // namespace kvikio::python
