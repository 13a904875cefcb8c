// A stand-in for libcufile.so.0, paired with the stand-in CUDA driver, so that the cuFile
// backend runs in CI without a GPU. It does what cuFile's compatibility mode does (POSIX IO
// between the file and the device buffer) and checks what the real library checks:
//  - the driver must be open; handles need an O_DIRECT descriptor;
//  - the device range must lie in one allocation of the current context
//    (CU_FILE_CUDA_POINTER_RANGE_ERROR / CU_FILE_CUDA_CONTEXT_MISMATCH);
//  - stream IO runs when the stream reaches it (cuLaunchHostFunc on the stand-in driver),
//    reading the size/offset arguments then, and fails with -EIO for device addresses that
//    are not 4 KiB aligned, as libcufile 1.15 does;
//  - the batch API completes operations at submit and reports each once;
//  - KVIKIO_STANDIN_CUFILE_REGISTER_ERROR=<code> makes handle registration fail (the GPU
//    machine without its udev database fails with 5027);
//  - KVIKIO_STANDIN_NVIDIA_FS=1 reports nvidia-fs 2.17 in the driver properties (a machine
//    with GPUDirect Storage proper, where AUTO takes cuFile); without it, nvfs is 0.0.
#include <cufile.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

using BackingFn    = char* (*)(CUdeviceptr, std::size_t, int*);
using HostFnLaunch = CUresult (*)(CUstream, CUhostFn, void*);

struct State {
  std::mutex mutex;
  bool open{false};
  std::size_t io_calls{0};       // cuFileRead/cuFileWrite calls, for tests
  std::map<void*, int> handles;  // handle -> buffered descriptor used for the IO
  std::set<const void*> buffers;
  CUfileDrvProps_t props{};
  BackingFn backing{nullptr};
  HostFnLaunch launch{nullptr};
  struct Batch {
    unsigned max;
    std::vector<CUfileIOEvents_t> done;
  };
  std::map<void*, Batch*> batches;

  State()
  {
    // No nvidia-fs (nvfs 0.0: is_gds_available is false, AUTO takes POSIX) unless
    // KVIKIO_STANDIN_NVIDIA_FS=1 simulates a machine that has it.
    const char* nvfs                 = std::getenv("KVIKIO_STANDIN_NVIDIA_FS");
    const bool with_nvfs             = nvfs != nullptr && std::string(nvfs) == "1";
    props.nvfs.major_version         = with_nvfs ? 2 : 0;
    props.nvfs.minor_version         = with_nvfs ? 17 : 0;
    props.nvfs.poll_thresh_size      = 4;
    props.nvfs.dcontrolflags         = 1U << CU_FILE_ALLOW_COMPAT_MODE;
    props.max_device_cache_size      = 131072;
    props.per_buffer_cache_size      = 1024;
    props.max_device_pinned_mem_size = 33554432;
    props.max_batch_io_size          = 128;
    const char* cuda                 = std::getenv("KVIKIO_LIBCUDA_PATH");
    void* lib = cuda != nullptr ? ::dlopen(cuda, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    if (lib != nullptr) {
      backing = reinterpret_cast<BackingFn>(::dlsym(lib, "kvikio_standin_backing"));
      launch  = reinterpret_cast<HostFnLaunch>(::dlsym(lib, "cuLaunchHostFunc"));
    }
  }
};

State& st()
{
  static auto* s = new State();
  return *s;
}

CUfileError_t status(CUfileOpError e) { return CUfileError_t{e, CUDA_SUCCESS}; }

/// Resolves a device range to host bytes, or returns a negative cuFile error.
ssize_t resolve(const void* base, std::size_t size, off_t buf_offset, char** out)
{
  auto& s = st();
  if (s.backing == nullptr) { return -CU_FILE_CUDA_DRIVER_ERROR; }
  int ctx_ok   = 0;
  const auto p = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(base)) +
                 static_cast<CUdeviceptr>(buf_offset);
  *out = s.backing(p, size, &ctx_ok);
  if (*out == nullptr) { return -CU_FILE_CUDA_POINTER_RANGE_ERROR; }
  if (ctx_ok == 0) { return -CU_FILE_CUDA_CONTEXT_MISMATCH; }
  return 0;
}

int fd_of(CUfileHandle_t fh)
{
  auto& s = st();
  std::lock_guard lock(s.mutex);
  auto it = s.handles.find(fh);
  return it == s.handles.end() ? -1 : it->second;
}

ssize_t do_io(
  CUfileHandle_t fh, const void* base, std::size_t size, off_t off, off_t buf_off, bool read)
{
  if (!st().open) { return -CU_FILE_DRIVER_NOT_INITIALIZED; }
  const int fd = fd_of(fh);
  if (fd < 0) { return -CU_FILE_HANDLE_NOT_REGISTERED; }
  if (off < 0 || buf_off < 0) { return -CU_FILE_INVALID_VALUE; }
  char* bytes = nullptr;
  if (ssize_t r = resolve(base, size, buf_off, &bytes); r < 0) { return r; }
  // One system call, as cuFile may return a short count near the end of a file.
  ssize_t n = read ? ::pread(fd, bytes, size, off) : ::pwrite(fd, bytes, size, off);
  return n < 0 ? -1 : n;
}

struct AsyncArgs {
  CUfileHandle_t fh;
  void* base;
  std::size_t* size_p;
  off_t* file_offset_p;
  off_t* buf_offset_p;
  ssize_t* bytes_p;
  bool read;
};

void CUDA_CB run_async(void* p)
{
  auto* a = static_cast<AsyncArgs*>(p);
  const auto addr =
    reinterpret_cast<std::uintptr_t>(a->base) + static_cast<std::uintptr_t>(*a->buf_offset_p);
  if (addr % 4096 != 0) {
    *a->bytes_p = -EIO;  // what libcufile 1.15 reports for unaligned device addresses
  } else {
    // Host functions may not call CUDA: resolve without flushing (the stream is ordered).
    *a->bytes_p = do_io(a->fh, a->base, *a->size_p, *a->file_offset_p, *a->buf_offset_p, a->read);
  }
  delete a;
}

CUfileError_t async_io(CUfileHandle_t fh,
                       void* base,
                       std::size_t* size_p,
                       off_t* off_p,
                       off_t* buf_off_p,
                       ssize_t* bytes_p,
                       CUstream stream,
                       bool read)
{
  if (!st().open) { return status(CU_FILE_DRIVER_NOT_INITIALIZED); }
  if (size_p == nullptr || off_p == nullptr || buf_off_p == nullptr || bytes_p == nullptr) {
    return status(CU_FILE_INVALID_VALUE);
  }
  if (st().launch == nullptr) { return status(CU_FILE_CUDA_DRIVER_ERROR); }
  auto* args = new AsyncArgs{fh, base, size_p, off_p, buf_off_p, bytes_p, read};
  if (st().launch(stream, run_async, args) != CUDA_SUCCESS) {
    delete args;
    return status(CU_FILE_CUDA_DRIVER_ERROR);
  }
  return status(CU_FILE_SUCCESS);
}

}  // namespace

extern "C" {

CUfileError_t cuFileDriverOpen(void)
{
  st().open = true;
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileDriverClose_v2(void)
{
  st().open = false;
  return status(CU_FILE_SUCCESS);
}

long cuFileUseCount(void) { return 0; }

CUfileError_t cuFileGetVersion(int* version)
{
  *version = 1150;
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileHandleRegister(CUfileHandle_t* fh, CUfileDescr_t* descr)
{
  auto& s = st();
  if (!s.open) { return status(CU_FILE_DRIVER_NOT_INITIALIZED); }
  if (const char* e = std::getenv("KVIKIO_STANDIN_CUFILE_REGISTER_ERROR")) {
    return status(static_cast<CUfileOpError>(std::atoi(e)));
  }
  if (descr == nullptr || descr->type != CU_FILE_HANDLE_TYPE_OPAQUE_FD) {
    return status(CU_FILE_INVALID_VALUE);
  }
  const int fd    = descr->handle.fd;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) { return status(CU_FILE_INVALID_FILE_TYPE); }
  if ((flags & O_DIRECT) == 0) { return status(CU_FILE_DIO_NOT_SET); }
  // IO goes through a buffered twin of the descriptor, like compat mode's POSIX path.
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  const int twin         = ::open(proc.c_str(), (flags & O_ACCMODE) | O_CLOEXEC);
  if (twin < 0) { return status(CU_FILE_PERMISSION_DENIED); }
  auto* handle = new char;
  std::lock_guard lock(s.mutex);
  s.handles[handle] = twin;
  *fh               = handle;
  return status(CU_FILE_SUCCESS);
}

void cuFileHandleDeregister(CUfileHandle_t fh)
{
  auto& s = st();
  std::lock_guard lock(s.mutex);
  auto it = s.handles.find(fh);
  if (it == s.handles.end()) { return; }
  ::close(it->second);
  delete static_cast<char*>(it->first);
  s.handles.erase(it);
}

/// Test control: how many cuFileRead/cuFileWrite calls were made.
__attribute__((visibility("default"))) std::size_t kvikio_standin_cufile_io_calls()
{
  std::lock_guard lock(st().mutex);
  return st().io_calls;
}

ssize_t cuFileRead(CUfileHandle_t fh, void* base, size_t size, off_t off, off_t buf_off)
{
  {
    std::lock_guard lock(st().mutex);
    ++st().io_calls;
  }
  return do_io(fh, base, size, off, buf_off, true);
}

ssize_t cuFileWrite(CUfileHandle_t fh, const void* base, size_t size, off_t off, off_t buf_off)
{
  {
    std::lock_guard lock(st().mutex);
    ++st().io_calls;
  }
  return do_io(fh, base, size, off, buf_off, false);
}

CUfileError_t cuFileBufRegister(const void* base, size_t length, int)
{
  auto& s = st();
  if (!s.open) { return status(CU_FILE_DRIVER_NOT_INITIALIZED); }
  char* bytes = nullptr;
  if (ssize_t r = resolve(base, length, 0, &bytes); r < 0) {
    return status(static_cast<CUfileOpError>(-r));
  }
  std::lock_guard lock(s.mutex);
  if (!s.buffers.insert(base).second) { return status(CU_FILE_MEMORY_ALREADY_REGISTERED); }
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileBufDeregister(const void* base)
{
  auto& s = st();
  std::lock_guard lock(s.mutex);
  if (s.buffers.erase(base) == 0) { return status(CU_FILE_MEMORY_NOT_REGISTERED); }
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t* props)
{
  if (!st().open) { return status(CU_FILE_DRIVER_NOT_INITIALIZED); }
  std::lock_guard lock(st().mutex);
  *props = st().props;
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileDriverSetPollMode(bool poll, size_t thresh)
{
  std::lock_guard lock(st().mutex);
  auto& f = st().props.nvfs.dcontrolflags;
  f       = poll ? (f | (1U << CU_FILE_USE_POLL_MODE)) : (f & ~(1U << CU_FILE_USE_POLL_MODE));
  st().props.nvfs.poll_thresh_size = thresh;
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t n)
{
  st().props.nvfs.max_direct_io_size = n;
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileDriverSetMaxCacheSize(size_t n)
{
  std::lock_guard lock(st().mutex);
  st().props.max_device_cache_size = static_cast<unsigned int>(n);
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t n)
{
  std::lock_guard lock(st().mutex);
  st().props.max_device_pinned_mem_size = static_cast<unsigned int>(n);
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileReadAsync(CUfileHandle_t fh,
                              void* base,
                              size_t* size_p,
                              off_t* off_p,
                              off_t* buf_off_p,
                              ssize_t* bytes_p,
                              CUstream stream)
{
  return async_io(fh, base, size_p, off_p, buf_off_p, bytes_p, stream, true);
}

CUfileError_t cuFileWriteAsync(CUfileHandle_t fh,
                               void* base,
                               size_t* size_p,
                               off_t* off_p,
                               off_t* buf_off_p,
                               ssize_t* bytes_p,
                               CUstream stream)
{
  return async_io(fh, base, size_p, off_p, buf_off_p, bytes_p, stream, false);
}

CUfileError_t cuFileStreamRegister(CUstream, unsigned) { return status(CU_FILE_SUCCESS); }
CUfileError_t cuFileStreamDeregister(CUstream) { return status(CU_FILE_SUCCESS); }

CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t* batch, unsigned nr)
{
  if (!st().open) { return status(CU_FILE_DRIVER_NOT_INITIALIZED); }
  auto* b = new State::Batch{nr, {}};
  std::lock_guard lock(st().mutex);
  st().batches[b] = b;
  *batch          = b;
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch,
                                  unsigned nr,
                                  CUfileIOParams_t* io,
                                  unsigned)
{
  auto* b = static_cast<State::Batch*>(batch);
  if (nr > b->max) { return status(CU_FILE_INVALID_VALUE); }
  for (unsigned i = 0; i < nr; ++i) {
    const auto& p = io[i].u.batch;
    ssize_t r     = do_io(
      io[i].fh, p.devPtr_base, p.size, p.file_offset, p.devPtr_offset, io[i].opcode == CUFILE_READ);
    CUfileIOEvents_t ev{};
    ev.cookie = io[i].cookie;
    ev.status = r == static_cast<ssize_t>(p.size) ? CUFILE_COMPLETE : CUFILE_FAILED;
    ev.ret    = r < 0 ? 0 : static_cast<size_t>(r);
    b->done.push_back(ev);
  }
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileBatchIOGetStatus(
  CUfileBatchHandle_t batch, unsigned, unsigned* nr, CUfileIOEvents_t* events, struct timespec*)
{
  auto* b          = static_cast<State::Batch*>(batch);
  const unsigned n = std::min<unsigned>(*nr, static_cast<unsigned>(b->done.size()));
  for (unsigned i = 0; i < n; ++i) {
    events[i] = b->done[i];
  }
  b->done.erase(b->done.begin(), b->done.begin() + n);
  *nr = n;
  return status(CU_FILE_SUCCESS);
}

CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t) { return status(CU_FILE_SUCCESS); }

void cuFileBatchIODestroy(CUfileBatchHandle_t batch)
{
  std::lock_guard lock(st().mutex);
  st().batches.erase(batch);
  delete static_cast<State::Batch*>(batch);
}

}  // extern "C"
