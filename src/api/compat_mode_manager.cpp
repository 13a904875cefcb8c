// CompatModeManager (kvikio/compat_mode_manager.hpp) and config_path (kvikio/cufile/config.hpp).
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <kvikio/compat_mode_manager.hpp>
#include <kvikio/cufile/config.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/shim.hpp>

namespace kvikio {

const std::string& config_path()
{
  static const std::string path = [] {
    const char* env  = std::getenv("CUFILE_ENV_PATH_JSON");
    std::string file = (env != nullptr && *env != '\0') ? env : "/etc/cufile.json";
    return ::access(file.c_str(), R_OK) == 0 ? file : std::string{};
  }();
  return path;
}

namespace {

// Async IO goes through cuFile only when its stream API exists and cuFile has a configuration.
bool async_prefers_posix(bool sync_prefers_posix)
{
  return sync_prefers_posix || !is_stream_api_available() || config_path().empty();
}

}  // namespace

CompatModeManager::CompatModeManager(const std::string& file_path,
                                     const std::string& /*flags*/,
                                     mode_t /*mode*/,
                                     CompatMode compat_mode_requested,
                                     FileHandle* file_handle)
  : compat_mode_requested_(compat_mode_requested)
{
  if (file_handle != nullptr && !file_handle->closed()) {
    *this = file_handle->get_compat_mode_manager();
    return;
  }
  if (compat_mode_requested == CompatMode::OFF && !is_cufile_available()) {
    throw CUfileException("cannot open '" + file_path +
                          "' with compat mode OFF: cuFile is not usable");
  }
  is_compat_mode_preferred_           = defaults::is_compat_mode_preferred(compat_mode_requested);
  is_compat_mode_preferred_for_async_ = async_prefers_posix(is_compat_mode_preferred_);
}

CompatModeManager::CompatModeManager(CompatMode compat_mode_requested,
                                     bool is_compat_mode_preferred,
                                     bool is_compat_mode_preferred_for_async) noexcept
  : compat_mode_requested_(compat_mode_requested),
    is_compat_mode_preferred_(is_compat_mode_preferred),
    is_compat_mode_preferred_for_async_(is_compat_mode_preferred_for_async)
{
}

bool CompatModeManager::is_compat_mode_preferred() const noexcept
{
  return is_compat_mode_preferred_;
}
bool CompatModeManager::is_compat_mode_preferred_for_async() const noexcept
{
  return is_compat_mode_preferred_for_async_;
}
CompatMode CompatModeManager::compat_mode_requested() const noexcept
{
  return compat_mode_requested_;
}

void CompatModeManager::validate_compat_mode_for_async() const
{
  if (compat_mode_requested_ != CompatMode::OFF || !is_compat_mode_preferred_for_async_) { return; }
  std::string missing;
  if (!is_stream_api_available()) { missing = "Missing the cuFile stream API."; }
  if (config_path().empty()) {
    missing += (missing.empty() ? "" : " ") + std::string("Missing cuFile configuration file.");
  }
  if (missing.empty()) { missing = "cuFile is not usable."; }
  throw CUfileException("compat mode OFF, but async IO cannot use cuFile: " + missing);
}

}  // namespace kvikio
