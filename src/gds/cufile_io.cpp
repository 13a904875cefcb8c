#include "gds/cufile_io.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include <kvikio/error.hpp>

#include "core/format.hpp"
#include "core/open_file.hpp"
#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio::detail {
namespace {

/// cuFileRead/Write return -1 with errno for OS errors, and -CUfileOpError for cuFile's own.
[[noreturn]] void throw_io_error(ssize_t ret, const char* call, const std::string& what)
{
  if (ret == -1) { throw GenericSystemError(std::string(call) + " of " + what + " failed"); }
  if (-ret < CUFILEOP_BASE_ERR) {
    throw GenericSystemError(static_cast<int>(-ret), std::string(call) + " of " + what + " failed");
  }
  throw CUfileException(std::string(call) + " of " + what +
                        " failed: " + cufile_io_error_text(ret));
}

void sync_null_stream(bool sync)
{
  // cuFile is not ordered with the legacy default stream; libkvikio callers expect it to be.
  if (sync) {
    cuda_check(CudaAPI::instance().StreamSynchronize(nullptr), "cuStreamSynchronize(0)");
  }
}

}  // namespace

CufileRegistration CufileRegistration::try_register(int fd, std::string* why) noexcept
{
  CufileRegistration reg;
  auto& api = CufileAPI::instance();
  if (!api.driver_open()) {
    *why = api.reason();
    return reg;
  }
  CUfileDescr_t desc{};
  desc.type      = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = fd;
  CUfileHandle_t handle{};
  CUfileError_t st = api.HandleRegister(&handle, &desc);
  if (st.err != CU_FILE_SUCCESS) {
    *why = "cuFileHandleRegister failed: " + cufile_error_text(st);
    return reg;
  }
  reg.handle_ = handle;
  return reg;
}

CufileRegistration::CufileRegistration(CufileRegistration&& o) noexcept
  : handle_(std::exchange(o.handle_, nullptr))
{
}

CufileRegistration& CufileRegistration::operator=(CufileRegistration&& o) noexcept
{
  if (this != &o) {
    CufileRegistration old(std::move(*this));
    handle_ = std::exchange(o.handle_, nullptr);
  }
  return *this;
}

CufileRegistration::~CufileRegistration() noexcept
{
  if (handle_ != nullptr) { CufileAPI::instance().HandleDeregister(handle_); }
}

std::size_t cufile_io(Direction direction,
                      const OpenFile& file,
                      const CufileRegistration& cufile,
                      CUcontext ctx,
                      const void* dev_base,
                      std::size_t size,
                      std::size_t file_offset,
                      std::size_t dev_offset,
                      bool sync_default_stream)
{
  const bool write = direction == Direction::write;
  const char* call = write ? "cuFileWrite" : "cuFileRead";
  auto& api        = CufileAPI::instance();
  ContextGuard guard(ctx);
  sync_null_stream(sync_default_stream);
  std::size_t done = 0;
  while (done < size) {
    const auto at     = static_cast<off_t>(file_offset + done);
    const auto dev_at = static_cast<off_t>(dev_offset + done);
    const ssize_t n =
      write ? api.Write(cufile.handle(), dev_base, size - done, at, dev_at)
            : api.Read(cufile.handle(), const_cast<void*>(dev_base), size - done, at, dev_at);
    if (n < 0) { throw_io_error(n, call, file_range_text(file.path(), file_offset, size)); }
    if (n == 0 && write) {
      throw GenericSystemError(EIO,
                               std::string(call) + " of " +
                                 file_range_text(file.path(), file_offset, size) +
                                 " made no progress after " + std::to_string(done) + " bytes");
    }
    if (n == 0) {
      throw EndOfFileError("read past the end of file " +
                           file_range_text(file.path(), file_offset, size) + ": the file is " +
                           std::to_string(file.nbytes()) + " bytes long");
    }
    done += static_cast<std::size_t>(n);
  }
  return size;
}

}  // namespace kvikio::detail
