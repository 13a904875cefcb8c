#pragma once
// The C++ calls the Python layer needs from the GPU/cuFile part of libkvikio, in one place.
//
// Each call binds to libkvikio's public name where our library provides it (detected with
// __has_include, so this file compiles against main as it is now) and otherwise does what a
// build without cuFile and CUDA support does. `pending()` lists the ones not wired yet, so
// that Python (kvikio._lib.pending_bindings) and the tests can say so instead of guessing.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>

#if __has_include(<kvikio/buffer.hpp>)
#include <kvikio/buffer.hpp>
#define KVIKIO_PY_HAS_BUFFER 1
#else
#define KVIKIO_PY_HAS_BUFFER 0
#endif

#if __has_include(<kvikio/stream.hpp>)
#include <kvikio/stream.hpp>
#define KVIKIO_PY_HAS_STREAM 1
#else
#define KVIKIO_PY_HAS_STREAM 0
#endif

#if __has_include(<kvikio/cufile/driver.hpp>)
#include <kvikio/cufile/driver.hpp>
#define KVIKIO_PY_HAS_DRIVER 1
#define KVIKIO_PY_DRIVER_BY_NAME 1
#elif __has_include(<kvikio/driver.hpp>)
#include <kvikio/driver.hpp>
#define KVIKIO_PY_HAS_DRIVER 1
#else
#define KVIKIO_PY_HAS_DRIVER 0
#endif

#if __has_include(<kvikio/bounce_buffer.hpp>)
#include <kvikio/bounce_buffer.hpp>
#define KVIKIO_PY_HAS_BOUNCE_BUFFER 1
#else
#define KVIKIO_PY_HAS_BOUNCE_BUFFER 0
#endif

// Device memory goes through the same FileHandle/MmapHandle calls as host memory once the
// library detects pointer kinds (the GPU part, which also brings buffer.hpp). Before that a
// device pointer handed to the POSIX path would crash, so Python refuses it with a clear error.
#ifndef KVIKIO_PY_DEVICE_MEMORY
#define KVIKIO_PY_DEVICE_MEMORY KVIKIO_PY_HAS_BUFFER
#endif

// RemoteHandle reads into host memory only until detail::read_range_into
// (src/remote/remote_handle.cpp) stages device pointers through pinned buffers; until then
// Python refuses device buffers for RemoteFile. Define it to 1 when that is wired.
#ifndef KVIKIO_PY_REMOTE_DEVICE_MEMORY
#define KVIKIO_PY_REMOTE_DEVICE_MEMORY 1
#endif

namespace kvikio::python::wiring {

inline constexpr bool device_memory_supported        = KVIKIO_PY_DEVICE_MEMORY != 0;
inline constexpr bool remote_device_memory_supported = KVIKIO_PY_REMOTE_DEVICE_MEMORY != 0;

/// Names of the bindings still waiting for their C++ call.
inline std::vector<std::string> pending()
{
  std::vector<std::string> out;
  if (!KVIKIO_PY_HAS_BUFFER) { out.insert(out.end(), {"memory_register", "memory_deregister"}); }
  if (!KVIKIO_PY_DEVICE_MEMORY) { out.emplace_back("device_memory"); }
  if (!KVIKIO_PY_REMOTE_DEVICE_MEMORY) { out.emplace_back("remote_device_memory"); }
  if (!KVIKIO_PY_HAS_STREAM) {
    // FileHandle::read_async/write_async come with stream.hpp. Until then Python
    // synchronizes the stream and does the IO on the calling thread, as libkvikio does in
    // compat mode.
    out.insert(out.end(),
               {"stream_register", "stream_deregister", "raw_read_async", "raw_write_async"});
  }
  if (!KVIKIO_PY_HAS_DRIVER) { out.emplace_back("cufile_driver"); }
  if (!KVIKIO_PY_HAS_BOUNCE_BUFFER) { out.emplace_back("bounce_buffer_free"); }
  return out;
}

/// cuFileBufRegister of the allocation holding `ptr` (a no-op without cuFile).
inline void memory_register([[maybe_unused]] const void* ptr)
{
#if KVIKIO_PY_HAS_BUFFER
  kvikio::memory_register(ptr);
#endif
}
inline void memory_deregister([[maybe_unused]] const void* ptr)
{
#if KVIKIO_PY_HAS_BUFFER
  kvikio::memory_deregister(ptr);
#endif
}

/// cuFileStreamRegister (a no-op without cuFile). `stream` is a CUstream handle.
inline void stream_register([[maybe_unused]] std::uintptr_t stream,
                            [[maybe_unused]] unsigned int flags)
{
#if KVIKIO_PY_HAS_STREAM
  kvikio::stream_register(reinterpret_cast<CUstream>(stream), flags);
#endif
}
inline void stream_deregister([[maybe_unused]] std::uintptr_t stream)
{
#if KVIKIO_PY_HAS_STREAM
  kvikio::stream_deregister(reinterpret_cast<CUstream>(stream));
#endif
}

/// Frees the pooled bounce buffers; returns the bytes freed (0 when none exist).
inline std::size_t bounce_buffer_free()
{
#if KVIKIO_PY_HAS_BOUNCE_BUFFER
  return kvikio::bounce_buffer_free();
#else
  return 0;
#endif
}

/// The cuFile driver properties, by their Python names. Without cuFile, `is_gds_available`
/// is false and every other property raises CUfileException (RuntimeError) naming it.
inline bool driver_is_gds_available()
{
#if KVIKIO_PY_HAS_DRIVER
  return kvikio::DriverProperties{}.is_gds_available();
#else
  return false;
#endif
}

[[noreturn]] inline void no_driver(const std::string& name)
{
  throw CUfileException("cuFile driver property '" + name +
                        "' is unavailable: this kvikio build has no cuFile driver support");
}

inline std::size_t driver_get(const std::string& name)
{
#if defined(KVIKIO_PY_DRIVER_BY_NAME)
  auto value = kvikio::cufile_driver::get(name);
  if (const bool* flag = std::get_if<bool>(&value)) { return *flag ? 1 : 0; }
  return std::get<std::size_t>(value);
#elif KVIKIO_PY_HAS_DRIVER
  kvikio::DriverProperties p;
  if (name == "major_version") { return p.get_nvfs_major_version(); }
  if (name == "minor_version") { return p.get_nvfs_minor_version(); }
  if (name == "allow_compat_mode") { return p.get_nvfs_allow_compat_mode() ? 1 : 0; }
  if (name == "poll_mode") { return p.get_nvfs_poll_mode() ? 1 : 0; }
  if (name == "poll_thresh_size") { return p.get_nvfs_poll_thresh_size(); }
  if (name == "max_device_cache_size") { return p.get_max_device_cache_size(); }
  if (name == "per_buffer_cache_size") { return p.get_per_buffer_cache_size(); }
  if (name == "max_pinned_memory_size") { return p.get_max_pinned_memory_size(); }
  if (name == "max_batch_io_size") { return p.get_max_batch_io_size(); }
  throw std::invalid_argument("unknown cuFile driver property '" + name + "'");
#else
  no_driver(name);
#endif
}

/// `is_bool`: the property is a flag (value 0 or 1).
inline void driver_set(const std::string& name,
                       [[maybe_unused]] std::size_t value,
                       [[maybe_unused]] bool is_bool)
{
#if defined(KVIKIO_PY_DRIVER_BY_NAME)
  if (is_bool) {
    kvikio::cufile_driver::set(name, kvikio::cufile_driver::Value{value != 0});
  } else {
    kvikio::cufile_driver::set(name, kvikio::cufile_driver::Value{value});
  }
#elif KVIKIO_PY_HAS_DRIVER
  kvikio::DriverProperties p;
  if (name == "poll_mode") { return p.set_nvfs_poll_mode(value != 0); }
  if (name == "poll_thresh_size") { return p.set_nvfs_poll_thresh_size(value); }
  if (name == "max_device_cache_size") { return p.set_max_device_cache_size(value); }
  if (name == "max_pinned_memory_size") { return p.set_max_pinned_memory_size(value); }
  throw std::invalid_argument("cuFile driver property '" + name + "' cannot be set");
#else
  no_driver(name);
#endif
}

}  // namespace kvikio::python::wiring
