// file_utils.hpp's CUFileHandleWrapper: a cuFile handle registration through the run-time
// loaded libcufile.
#include <kvikio/file_utils.hpp>

#include <utility>

#include "shim/cufile_api.hpp"

namespace kvikio {

CUFileHandleWrapper::~CUFileHandleWrapper() noexcept { unregister_handle(); }

CUFileHandleWrapper::CUFileHandleWrapper(CUFileHandleWrapper&& o) noexcept
  : handle_(std::exchange(o.handle_, nullptr)), registered_(std::exchange(o.registered_, false))
{
}

CUFileHandleWrapper& CUFileHandleWrapper::operator=(CUFileHandleWrapper&& o) noexcept
{
  if (this != &o) {
    unregister_handle();
    handle_     = std::exchange(o.handle_, nullptr);
    registered_ = std::exchange(o.registered_, false);
  }
  return *this;
}

std::optional<CUfileError_t> CUFileHandleWrapper::register_handle(int fd) noexcept
{
  if (registered_) { return std::nullopt; }
  auto& api = detail::CufileAPI::instance();
  // Without libcufile, or with a driver that does not open, there is nothing to register
  // with: say so the way cuFile itself does.
  if (!api.driver_open()) { return CUfileError_t{CU_FILE_DRIVER_NOT_INITIALIZED, CUDA_SUCCESS}; }
  CUfileDescr_t desc{};
  desc.type            = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd       = fd;
  CUfileError_t status = api.HandleRegister(&handle_, &desc);
  registered_          = status.err == CU_FILE_SUCCESS;
  if (!registered_) { handle_ = nullptr; }
  return status;
}

bool CUFileHandleWrapper::registered() const noexcept { return registered_; }

CUfileHandle_t CUFileHandleWrapper::handle() const noexcept { return handle_; }

void CUFileHandleWrapper::unregister_handle() noexcept
{
  if (!registered_) { return; }
  detail::CufileAPI::instance().HandleDeregister(handle_);
  handle_     = nullptr;
  registered_ = false;
}

}  // namespace kvikio
