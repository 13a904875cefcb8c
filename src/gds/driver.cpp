// The cuFile driver's properties and buffer registration.
#include <kvikio/buffer.hpp>
#include <kvikio/cufile/driver.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <stdexcept>

#include "core/format.hpp"
#include "device/pointer.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio {
namespace {

// A pointer, not a reference: GCC 13's -Wdangling-reference flags the latter.
detail::CufileAPI* usable_cufile(const std::string& what)
{
  auto& api = detail::CufileAPI::instance();
  if (!api.driver_open()) {
    throw CUfileException(what + ": cuFile is not usable (" + api.reason() + ")");
  }
  return &api;
}

bool flag(unsigned int flags, int bit) { return (flags & (1U << bit)) != 0; }

}  // namespace

DriverInitializer::DriverInitializer() { usable_cufile("opening the cuFile driver"); }
DriverInitializer::~DriverInitializer() noexcept { detail::CufileAPI::instance().driver_close(); }

void DriverProperties::lazy_init()
{
  if (initialized_) { return; }
  auto& api = *usable_cufile("reading cuFile driver properties");
  CUfileDrvProps_t props{};
  detail::cufile_check(api.DriverGetProperties(&props), "cuFileDriverGetProperties");
  major_                  = props.nvfs.major_version;
  minor_                  = props.nvfs.minor_version;
  control_flags_          = props.nvfs.dcontrolflags;
  poll_thresh_size_       = props.nvfs.poll_thresh_size;
  max_device_cache_size_  = props.max_device_cache_size;
  per_buffer_cache_size_  = props.per_buffer_cache_size;
  max_pinned_memory_size_ = props.max_device_pinned_mem_size;
  max_batch_io_size_      = props.max_batch_io_size;
  initialized_            = true;
}

bool DriverProperties::is_gds_available()
{
  try {
    lazy_init();
  } catch (const CUfileException&) {
    return false;
  }
  return !(major_ == 0 && minor_ == 0);
}
unsigned int DriverProperties::get_nvfs_major_version() { return lazy_init(), major_; }
unsigned int DriverProperties::get_nvfs_minor_version() { return lazy_init(), minor_; }
bool DriverProperties::get_nvfs_allow_compat_mode()
{
  lazy_init();
  return flag(control_flags_, CU_FILE_ALLOW_COMPAT_MODE);
}
bool DriverProperties::get_nvfs_poll_mode()
{
  lazy_init();
  return flag(control_flags_, CU_FILE_USE_POLL_MODE);
}
std::size_t DriverProperties::get_nvfs_poll_thresh_size() { return lazy_init(), poll_thresh_size_; }
void DriverProperties::set_nvfs_poll_mode(bool enable)
{
  lazy_init();
  detail::cufile_check(detail::CufileAPI::instance().DriverSetPollMode(enable, poll_thresh_size_),
                       "cuFileDriverSetPollMode",
                       std::string("(poll_mode = ") + (enable ? "true" : "false") + ")");
  if (enable) {
    control_flags_ |= 1U << CU_FILE_USE_POLL_MODE;
  } else {
    control_flags_ &= ~(1U << CU_FILE_USE_POLL_MODE);
  }
}
void DriverProperties::set_nvfs_poll_thresh_size(std::size_t size_in_kb)
{
  lazy_init();
  detail::cufile_check(
    detail::CufileAPI::instance().DriverSetPollMode(get_nvfs_poll_mode(), size_in_kb),
    "cuFileDriverSetPollMode",
    "(poll_thresh_size = " + std::to_string(size_in_kb) + " KiB)");
  poll_thresh_size_ = size_in_kb;
}
std::size_t DriverProperties::get_max_device_cache_size()
{
  return lazy_init(), max_device_cache_size_;
}
void DriverProperties::set_max_device_cache_size(std::size_t size_in_kb)
{
  lazy_init();
  detail::cufile_check(detail::CufileAPI::instance().DriverSetMaxCacheSize(size_in_kb),
                       "cuFileDriverSetMaxCacheSize",
                       "(max_device_cache_size = " + std::to_string(size_in_kb) + " KiB)");
  max_device_cache_size_ = size_in_kb;
}
std::size_t DriverProperties::get_per_buffer_cache_size()
{
  return lazy_init(), per_buffer_cache_size_;
}
std::size_t DriverProperties::get_max_pinned_memory_size()
{
  return lazy_init(), max_pinned_memory_size_;
}
void DriverProperties::set_max_pinned_memory_size(std::size_t size_in_kb)
{
  lazy_init();
  detail::cufile_check(detail::CufileAPI::instance().DriverSetMaxPinnedMemSize(size_in_kb),
                       "cuFileDriverSetMaxPinnedMemSize",
                       "(max_pinned_memory_size = " + std::to_string(size_in_kb) + " KiB)");
  max_pinned_memory_size_ = size_in_kb;
}
std::size_t DriverProperties::get_max_batch_io_size() { return lazy_init(), max_batch_io_size_; }

DriverProperties get_driver_properties() { return DriverProperties{}; }

namespace cufile_driver {
namespace {

/// One driver property: its name, its kind, and how it is read and (when settable) set on the
/// cached DriverProperties. The one list of them: names, types and settability for C++ and
/// Python (kvikio.cufile_driver) all come from here.
struct PropertySpec {
  const char* name;
  bool is_flag;  // a bool; otherwise a size (KiB, or a count)
  Value (*get)(DriverProperties&);
  void (*set)(DriverProperties&, bool flag, std::size_t n);  // null: read-only
};

// In upstream's order.
const PropertySpec specs[] = {
  {"is_gds_available",
   true,
   [](DriverProperties& p) -> Value { return p.is_gds_available(); },
   nullptr},
  {"major_version",
   false,
   [](DriverProperties& p) -> Value { return std::size_t{p.get_nvfs_major_version()}; },
   nullptr},
  {"minor_version",
   false,
   [](DriverProperties& p) -> Value { return std::size_t{p.get_nvfs_minor_version()}; },
   nullptr},
  {"allow_compat_mode",
   true,
   [](DriverProperties& p) -> Value { return p.get_nvfs_allow_compat_mode(); },
   nullptr},
  {"poll_mode",
   true,
   [](DriverProperties& p) -> Value { return p.get_nvfs_poll_mode(); },
   [](DriverProperties& p, bool flag, std::size_t) { p.set_nvfs_poll_mode(flag); }},
  {"poll_thresh_size",
   false,
   [](DriverProperties& p) -> Value { return p.get_nvfs_poll_thresh_size(); },
   [](DriverProperties& p, bool, std::size_t n) { p.set_nvfs_poll_thresh_size(n); }},
  {"max_device_cache_size",
   false,
   [](DriverProperties& p) -> Value { return p.get_max_device_cache_size(); },
   [](DriverProperties& p, bool, std::size_t n) { p.set_max_device_cache_size(n); }},
  {"per_buffer_cache_size",
   false,
   [](DriverProperties& p) -> Value { return p.get_per_buffer_cache_size(); },
   nullptr},
  {"max_pinned_memory_size",
   false,
   [](DriverProperties& p) -> Value { return p.get_max_pinned_memory_size(); },
   [](DriverProperties& p, bool, std::size_t n) { p.set_max_pinned_memory_size(n); }},
  {"max_batch_io_size",
   false,
   [](DriverProperties& p) -> Value { return p.get_max_batch_io_size(); },
   nullptr},
};

std::mutex& props_mutex()
{
  static std::mutex m;
  return m;
}

// One cached set of properties per process: the driver does not report every setting back
// (poll_mode set in compat mode reads back unchanged), so a set must be what a get sees.
DriverProperties& cached_props()
{
  static DriverProperties props;
  return props;
}

[[noreturn]] void unknown(const std::string& name)
{
  throw std::invalid_argument("unknown cuFile driver property '" + name + "': expected one of " +
                              detail::join_names(property_names()));
}

const PropertySpec& spec(const std::string& name)
{
  for (const auto& sp : specs) {
    if (name == sp.name) { return sp; }
  }
  unknown(name);
}

}  // namespace

std::vector<std::string> property_names()
{
  std::vector<std::string> names;
  for (const auto& sp : specs) {
    names.emplace_back(sp.name);
  }
  return names;
}

bool is_settable(const std::string& name) { return spec(name).set != nullptr; }

bool is_flag(const std::string& name) { return spec(name).is_flag; }

Value get(const std::string& name)
{
  const auto& sp = spec(name);
  std::lock_guard lock(props_mutex());
  return sp.get(cached_props());
}

void set(const std::string& name, const Value& value)
{
  const auto& sp = spec(name);
  if (sp.set == nullptr) {
    throw std::invalid_argument("cuFile driver property '" + name + "' is read-only");
  }
  if (sp.is_flag && !std::holds_alternative<bool>(value)) {
    throw std::invalid_argument("cuFile driver property '" + name + "' takes a bool");
  }
  if (!sp.is_flag && !std::holds_alternative<std::size_t>(value)) {
    throw std::invalid_argument("cuFile driver property '" + name + "' takes a size in KiB");
  }
  std::lock_guard lock(props_mutex());
  if (sp.is_flag) {
    sp.set(cached_props(), std::get<bool>(value), 0);
  } else {
    sp.set(cached_props(), false, std::get<std::size_t>(value));
  }
}

}  // namespace cufile_driver

void buffer_register(const void* devPtr_base,
                     std::size_t size,
                     int flags,
                     const std::vector<int>& errors_to_ignore)
{
  if (defaults::is_compat_mode_preferred()) { return; }
  auto& api        = *usable_cufile("registering a buffer");
  CUfileError_t st = api.BufRegister(devPtr_base, size, flags);
  const int code   = static_cast<int>(st.err);
  const bool ignored =
    std::find(errors_to_ignore.begin(), errors_to_ignore.end(), code) != errors_to_ignore.end();
  if (!ignored) {
    detail::cufile_check(st,
                         "cuFileBufRegister",
                         "for buffer at " +
                           std::to_string(reinterpret_cast<std::uintptr_t>(devPtr_base)) + " (" +
                           std::to_string(size) + " bytes)");
  }
}

void buffer_deregister(const void* devPtr_base)
{
  if (defaults::is_compat_mode_preferred()) { return; }
  auto& api = *usable_cufile("deregistering a buffer");
  detail::cufile_check(
    api.BufDeregister(devPtr_base),
    "cuFileBufDeregister",
    "for buffer at " + std::to_string(reinterpret_cast<std::uintptr_t>(devPtr_base)));
}

void memory_register(const void* devPtr, int flags, const std::vector<int>& errors_to_ignore)
{
  auto info = detail::get_pointer_info(devPtr);
  if (info.kind != detail::MemoryKind::DEVICE) {
    throw std::invalid_argument("memory_register: pointer " +
                                std::to_string(reinterpret_cast<std::uintptr_t>(devPtr)) +
                                " is not device memory");
  }
  detail::ContextGuard guard(info.context);
  buffer_register(
    reinterpret_cast<const void*>(info.base), info.alloc_size, flags, errors_to_ignore);
}

void memory_deregister(const void* devPtr)
{
  auto info = detail::get_pointer_info(devPtr);
  if (info.kind != detail::MemoryKind::DEVICE) {
    throw std::invalid_argument("memory_deregister: pointer " +
                                std::to_string(reinterpret_cast<std::uintptr_t>(devPtr)) +
                                " is not device memory");
  }
  detail::ContextGuard guard(info.context);
  buffer_deregister(reinterpret_cast<const void*>(info.base));
}

}  // namespace kvikio
