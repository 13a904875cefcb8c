#pragma once
/// @file cufile/driver.hpp
/// The cuFile driver: explicit open/close and its properties. cuFile is loaded at run time;
/// where it is not usable, reading a property (other than is_gds_available) and every setter
/// throw CUfileException saying why.
#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include <kvikio/export.hpp>
// At least what upstream's header of this name makes visible: code written for it relies on it.
#include <kvikio/shim.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/// Opens the cuFile driver for the object's life (the library also opens it on first use).
/// Throws CUfileException with the reason when cuFile is not usable. Not copyable.
class KVIKIO_EXPORT DriverInitializer {
 public:
  DriverInitializer();
  ~DriverInitializer() noexcept;
  DriverInitializer(const DriverInitializer&)            = delete;
  DriverInitializer& operator=(const DriverInitializer&) = delete;
};

/// The driver's properties, read lazily on first access (cuFileDriverGetProperties). Sizes
/// are in KiB as cuFile reports them. Setters change the driver and the cached value.
/// Not thread safe: use one object per thread, or get_driver_properties() under a lock.
class KVIKIO_EXPORT DriverProperties {
 public:
  DriverProperties() = default;

  /// GPUDirect Storage proper (the nvidia-fs driver) is present: nvfs version is not 0.0.
  /// False when cuFile is not usable; never throws.
  bool is_gds_available();
  /// Major version of the nvidia-fs kernel driver.
  [[nodiscard]] unsigned int get_nvfs_major_version();
  /// Minor version of the nvidia-fs kernel driver.
  [[nodiscard]] unsigned int get_nvfs_minor_version();
  /// Whether cuFile may fall back to its own compatibility mode (`allow_compat_mode` of
  /// cufile.json).
  [[nodiscard]] bool get_nvfs_allow_compat_mode();
  /// Whether cuFile polls for completion of small IO instead of waiting for an interrupt.
  [[nodiscard]] bool get_nvfs_poll_mode();
  /// The largest IO (in KiB) that is polled when poll mode is on.
  [[nodiscard]] std::size_t get_nvfs_poll_thresh_size();
  /// Turns poll mode on or off.
  void set_nvfs_poll_mode(bool enable);
  /// Sets the largest IO (in KiB) that poll mode polls.
  void set_nvfs_poll_thresh_size(std::size_t size_in_kb);
  /// Size (in KiB) of cuFile's cache of device bounce buffers.
  [[nodiscard]] std::size_t get_max_device_cache_size();
  /// Sets the size (in KiB) of cuFile's device bounce buffer cache.
  void set_max_device_cache_size(std::size_t size_in_kb);
  /// Size (in KiB) of each of cuFile's per-buffer caches (read-only).
  [[nodiscard]] std::size_t get_per_buffer_cache_size();
  /// Largest amount (in KiB) of pinned memory cuFile may use.
  [[nodiscard]] std::size_t get_max_pinned_memory_size();
  /// Sets the largest amount (in KiB) of pinned memory cuFile may use.
  void set_max_pinned_memory_size(std::size_t size_in_kb);
  /// Most operations in one cuFile batch (read-only).
  [[nodiscard]] std::size_t get_max_batch_io_size();

 private:
  void lazy_init();
  bool initialized_{false};
  unsigned int major_{0}, minor_{0};
  unsigned int control_flags_{0};
  std::size_t poll_thresh_size_{0};
  std::size_t max_device_cache_size_{0};
  std::size_t per_buffer_cache_size_{0};
  std::size_t max_pinned_memory_size_{0};
  std::size_t max_batch_io_size_{0};
};

/// A fresh DriverProperties (values are read from the driver on first access).
KVIKIO_EXPORT DriverProperties get_driver_properties();

/// Name-based access for bindings (Python `kvikio.cufile_driver.get/set`). Names:
/// is_gds_available, major_version, minor_version, allow_compat_mode, per_buffer_cache_size,
/// max_batch_io_size (read-only), poll_mode, poll_thresh_size, max_device_cache_size,
/// max_pinned_memory_size (settable). Thread safe.
namespace cufile_driver {
/// A property's value: a flag or a number.
using Value = std::variant<bool, std::size_t>;
/// Every property name, in a fixed order.
KVIKIO_EXPORT std::vector<std::string> property_names();
/// Whether `name` may be set (std::invalid_argument for an unknown name).
KVIKIO_EXPORT bool is_settable(const std::string& name);
/// Whether `name` is a flag (a bool); otherwise a size (std::size_t).
KVIKIO_EXPORT bool is_flag(const std::string& name);
/// Throws std::invalid_argument naming an unknown property (listing the known ones),
/// CUfileException when cuFile is not usable.
KVIKIO_EXPORT Value get(const std::string& name);
/// Also throws std::invalid_argument for a read-only property or a value of the wrong type.
KVIKIO_EXPORT void set(const std::string& name, const Value& value);
}  // namespace cufile_driver

}  // namespace kvikio
