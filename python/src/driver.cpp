// kvikio._lib's cuFile driver properties (by name, for kvikio.cufile_driver) and CUDA stream
// registration.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>
#include <variant>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <kvikio/cufile/driver.hpp>
#include <kvikio/shim.hpp>
#include <kvikio/stream.hpp>

#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvikio::python {
namespace {

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

/// The driver opens kvikio.cufile_driver.driver_open() made that driver_close() has not
/// undone yet: each holds one reference to the cuFile driver (a DriverInitializer).
std::mutex opens_mutex;
std::vector<std::unique_ptr<DriverInitializer>>& python_opens()
{
  static auto* opens = new std::vector<std::unique_ptr<DriverInitializer>>();  // never freed:
  return *opens;  // closing the driver at interpreter teardown is not needed
}

}  // namespace

void bind_driver(nb::module_& m)
{
  m.def("driver_is_gds_available", [] { return DriverProperties{}.is_gds_available(); });
  m.def(
    "driver_properties",
    [] {
      std::vector<std::tuple<std::string, bool, bool>> out;
      for (const auto& name : cufile_driver::property_names()) {
        out.emplace_back(name, cufile_driver::is_flag(name), cufile_driver::is_settable(name));
      }
      return out;
    },
    "Every cuFile driver property as (name, is_flag, settable), in the library's order.");
  m.def("driver_get", &driver_get, "name"_a);
  m.def("driver_set", &driver_set, "name"_a, "value"_a, "is_bool"_a);
  m.def("libcufile_version", &cufile_version, "cuFileGetVersion(): 1150 for 1.15, 0 if unknown.");
  m.def(
    "driver_open",
    [] {
      auto opened = std::make_unique<DriverInitializer>();  // throws if cuFile is not usable
      std::lock_guard lock(opens_mutex);
      python_opens().push_back(std::move(opened));
    },
    nb::call_guard<nb::gil_scoped_release>());
  m.def(
    "driver_close",
    [] {
      std::unique_ptr<DriverInitializer> last;
      {
        std::lock_guard lock(opens_mutex);
        if (python_opens().empty()) { return; }
        last = std::move(python_opens().back());
        python_opens().pop_back();
      }
    },
    nb::call_guard<nb::gil_scoped_release>());
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
}

}  // namespace kvikio::python
