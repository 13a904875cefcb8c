#pragma once
// Helpers for the device-memory tests: they run against the stand-in driver
// (KVIKIO_TEST_USE_STANDIN=1, labels device;standin) or the real one (label gpu).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <kvikio/device_memory.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/shim.hpp>

namespace kvikio::test {

/// True when this process runs against the stand-in driver.
inline bool using_standin()
{
  const char* p = std::getenv("KVIKIO_LIBCUDA_PATH");
  return p != nullptr && std::string(p).find("standin") != std::string::npos;
}

/// The libcuda line of library_status(), for skip messages.
inline std::string cuda_reason()
{
  for (const auto& s : kvikio::library_status()) {
    if (s.library == "libcuda") { return s.reason; }
  }
  return "unknown";
}

/// A stand-in control function (kvikio_standin_*), or null on a real driver.
template <typename F>
F standin_fn(const char* name)
{
  if (!using_standin()) { return nullptr; }
  void* lib = ::dlopen(std::getenv("KVIKIO_LIBCUDA_PATH"), RTLD_NOW | RTLD_NOLOAD);
  return lib == nullptr ? nullptr : reinterpret_cast<F>(::dlsym(lib, name));
}

#define KVIKIO_REQUIRE_DEVICE()                                                 \
  do {                                                                          \
    if (kvikio::device_count() == 0) {                                          \
      GTEST_SKIP() << "no CUDA device (" << kvikio::test::cuda_reason() << ")"; \
    }                                                                           \
  } while (0)

/// Empty when files can be opened with compat mode OFF here (cuFile loaded, driver open and
/// handle registration works for a file at `probe_path`), else why not.
inline std::string cufile_unusable_reason(const std::string& probe_path)
{
  if (!kvikio::is_cufile_available()) { return kvikio::library_status().back().reason; }
  try {
    kvikio::FileHandle f(probe_path, "w", kvikio::FileHandle::m644, kvikio::CompatMode::OFF);
  } catch (const kvikio::CUfileException& e) {
    return e.what();
  }
  return {};
}

/// Sets the compat mode for one scope.
class ScopedCompatMode {
 public:
  explicit ScopedCompatMode(kvikio::CompatMode m) : old_(kvikio::defaults::compat_mode())
  {
    kvikio::defaults::set_compat_mode(m);
  }
  ~ScopedCompatMode() { kvikio::defaults::set_compat_mode(old_); }
  ScopedCompatMode(const ScopedCompatMode&)            = delete;
  ScopedCompatMode& operator=(const ScopedCompatMode&) = delete;

 private:
  kvikio::CompatMode old_;
};

inline std::vector<char> to_host(const kvikio::DeviceBuffer& d, std::size_t n, std::size_t off = 0)
{
  std::vector<char> out(n);
  d.copy_to_host(out.data(), n, off);
  return out;
}

}  // namespace kvikio::test
