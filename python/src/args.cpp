#include "args.hpp"

#include <Python.h>

#include <limits>
#include <stdexcept>

#include <nanobind/stl/string.h>

#include <kvikio/defaults.hpp>

namespace nb = nanobind;

namespace kvikio::python {

std::string repr_of(nb::handle v) { return nb::cast<std::string>(nb::repr(v)); }

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
  // The overflow flag comes first: on overflow v is -1, so testing the sign first would call
  // 2**63 negative. Values above 2**63-1 are refused outright: no file offset (off_t) or IO
  // size (ssize_t) can be that large, and 2**64-1 would otherwise alias the C++
  // unspecified_offset sentinel ("write at the current position").
  if (overflow > 0) {
    throw std::overflow_error(std::string(what) + " " + repr_of(value) +
                              " is too large (at most 2**63-1)");
  }
  if (overflow < 0 || v < 0) {
    throw std::overflow_error(std::string(what) + " must not be negative, got " + repr_of(value));
  }
  return static_cast<std::size_t>(v);
}

std::optional<std::size_t> to_opt_size(nb::handle value, const char* what)
{
  if (value.is_none()) { return std::nullopt; }
  return to_size(value, what);
}

off_t to_off_t(std::size_t v, const char* what)
{
  if (v > static_cast<std::size_t>(std::numeric_limits<off_t>::max())) {
    throw std::overflow_error(std::string(what) + " " + std::to_string(v) + " is too large");
  }
  return static_cast<off_t>(v);
}

std::size_t task_size_or_default(nb::handle task_size)
{
  return task_size.is_none() ? defaults::task_size() : to_size(task_size, "task_size");
}

std::size_t request_size(const BufferView& view,
                         nb::handle size,
                         std::size_t buf_offset,
                         const char* offset_name)
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

}  // namespace kvikio::python
