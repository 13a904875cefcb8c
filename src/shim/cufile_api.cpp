#include "shim/cufile_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include <kvikio/error.hpp>

#include "shim/cuda_api.hpp"

namespace kvikio::detail {
namespace {

template <typename F>
void bind(void* lib, F& fn, const char* name, std::string* missing)
{
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  if (fn == nullptr && missing != nullptr && missing->empty()) { *missing = name; }
}

}  // namespace

CufileAPI::CufileAPI()
{
  const char* env      = std::getenv("KVIKIO_LIBCUFILE_PATH");
  const char* cuda_env = std::getenv("KVIKIO_LIBCUDA_PATH");
  if ((env == nullptr || *env == '\0') && cuda_env != nullptr && *cuda_env != '\0') {
    // A stand-in CUDA driver cannot be paired with the real libcufile, which would talk to
    // the real driver about pointers it never saw.
    path_ = "libcufile.so.0";
    load_reason_ =
      "not tried: KVIKIO_LIBCUDA_PATH selects another CUDA driver library; set "
      "KVIKIO_LIBCUFILE_PATH to pair a cuFile library with it";
    return;
  }
  path_   = (env != nullptr && *env != '\0') ? env : "libcufile.so.0";
  void* h = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* err = ::dlerror();
    load_reason_    = "library missing: cannot load " + path_ + ": " + (err ? err : "unknown");
    return;
  }
  std::string missing;
  bind(h, DriverOpen, "cuFileDriverOpen", &missing);
  bind(h, DriverClose, "cuFileDriverClose_v2", nullptr);
  if (DriverClose == nullptr) { bind(h, DriverClose, "cuFileDriverClose", &missing); }
  bind(h, HandleRegister, "cuFileHandleRegister", &missing);
  bind(h, HandleDeregister, "cuFileHandleDeregister", &missing);
  bind(h, Read, "cuFileRead", &missing);
  bind(h, Write, "cuFileWrite", &missing);
  bind(h, BufRegister, "cuFileBufRegister", &missing);
  bind(h, BufDeregister, "cuFileBufDeregister", &missing);
  bind(h, DriverGetProperties, "cuFileDriverGetProperties", &missing);
  bind(h, DriverSetPollMode, "cuFileDriverSetPollMode", &missing);
  bind(h, DriverSetMaxCacheSize, "cuFileDriverSetMaxCacheSize", &missing);
  bind(h, DriverSetMaxPinnedMemSize, "cuFileDriverSetMaxPinnedMemSize", &missing);
  if (!missing.empty()) {
    load_reason_ = "symbol missing: " + missing + " not found in " + path_;
    return;
  }
  bind(h, GetVersion, "cuFileGetVersion", nullptr);
  bind(h, BatchIOSetUp, "cuFileBatchIOSetUp", nullptr);
  bind(h, BatchIOSubmit, "cuFileBatchIOSubmit", nullptr);
  bind(h, BatchIOGetStatus, "cuFileBatchIOGetStatus", nullptr);
  bind(h, BatchIOCancel, "cuFileBatchIOCancel", nullptr);
  bind(h, BatchIODestroy, "cuFileBatchIODestroy", nullptr);
  if (!BatchIOSubmit || !BatchIOGetStatus || !BatchIOCancel || !BatchIODestroy) {
    BatchIOSetUp = nullptr;
  }
  bind(h, ReadAsync, "cuFileReadAsync", nullptr);
  bind(h, WriteAsync, "cuFileWriteAsync", nullptr);
  bind(h, StreamRegister, "cuFileStreamRegister", nullptr);
  bind(h, StreamDeregister, "cuFileStreamDeregister", nullptr);
  if (!WriteAsync || !StreamRegister || !StreamDeregister) { ReadAsync = nullptr; }
  loaded_ = true;
}

CufileAPI& CufileAPI::instance()
{
  static auto* api = new CufileAPI();  // never unloaded (see CudaAPI::instance)
  return *api;
}

bool CufileAPI::driver_open() noexcept
{
  std::lock_guard lock(mutex_);
  if (open_ || open_tried_) { return open_; }
  open_tried_ = true;
  if (!loaded_) {
    open_reason_ = load_reason_;
    return false;
  }
  const auto& cuda = CudaAPI::instance();
  if (!cuda.available()) {
    open_reason_ = "the CUDA driver is not available (" + cuda.reason() + ")";
    return false;
  }
  CUfileError_t st = DriverOpen();
  if (st.err != CU_FILE_SUCCESS) {
    open_reason_ = "driver failed to open: cuFileDriverOpen returned " + cufile_error_text(st);
    return false;
  }
  open_ = true;
  // A real libcufile without the nvidia-fs module reports nvfs version 0.0.
  CUfileDrvProps_t props{};
  nvidia_fs_ = DriverGetProperties(&props).err == CU_FILE_SUCCESS &&
               (props.nvfs.major_version != 0 || props.nvfs.minor_version != 0);
  open_reason_ = "loaded " + path_ + ", driver open" + (nvidia_fs_ ? "" : ", no nvidia-fs");
  return true;
}

bool CufileAPI::nvidia_fs_present() noexcept
{
  if (!driver_open()) { return false; }
  std::lock_guard lock(mutex_);
  return nvidia_fs_;
}

void CufileAPI::driver_close() noexcept
{
  std::lock_guard lock(mutex_);
  if (open_) { DriverClose(); }
  open_       = false;
  open_tried_ = false;
}

bool CufileAPI::driver_is_open() const noexcept
{
  std::lock_guard lock(mutex_);
  return open_;
}

std::string CufileAPI::reason() const
{
  std::lock_guard lock(mutex_);
  if (open_tried_) { return open_reason_; }
  return loaded_ ? "loaded " + path_ + ", driver not opened yet" : load_reason_;
}

int CufileAPI::version() const noexcept
{
  int v = 0;
  if (GetVersion != nullptr && GetVersion(&v).err == CU_FILE_SUCCESS) { return v; }
  return 0;
}

std::string cufile_error_text(CUfileError_t status)
{
  const int code   = static_cast<int>(status.err);
  std::string text = std::string(CUFILE_ERRSTR(code)) + " (" + std::to_string(code) + ")";
  if (IS_CUDA_ERR(status)) { text += ", CUDA " + cuda_error_name(status.cu_err); }
  return text;
}

std::string cufile_io_error_text(long long ret)
{
  const long long code = -ret;
  if (ret == -1) { return "an OS error"; }
  if (code > CUFILEOP_BASE_ERR) {
    return cufile_error_text(CUfileError_t{static_cast<CUfileOpError>(code), CUDA_SUCCESS});
  }
  return std::string(std::strerror(static_cast<int>(code))) + " (errno " + std::to_string(code) +
         ")";
}

void cufile_check(CUfileError_t status, const char* call, const std::string& context)
{
  if (status.err == CU_FILE_SUCCESS) { return; }
  throw CUfileException(std::string(call) + " failed: " + cufile_error_text(status) +
                        (context.empty() ? "" : " " + context));
}

bool cufile_driver_usable() noexcept { return CufileAPI::instance().driver_open(); }
bool gds_usable() noexcept { return CufileAPI::instance().nvidia_fs_present(); }

}  // namespace kvikio::detail
