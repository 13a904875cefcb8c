// A stand-in for the CUDA driver library (libcuda.so.1), for running the device-memory code
// paths on machines without a GPU. It exports the cu* functions kvikio uses, with host memory
// behind them, and models what bugs would trip over on a real GPU:
//  - device pointers live in a reserved PROT_NONE address range, so any CPU access of device
//    memory faults, and copies must stay inside one allocation (else CUDA_ERROR_INVALID_VALUE);
//  - async copies on a stream run only when the stream is synchronised, so reusing a staging
//    buffer before its copy completed reads or writes the wrong bytes;
//  - a synchronous copy from pageable memory finishes on the legacy default stream, which
//    blocking streams wait for and non-blocking ones do not (as on the real driver);
//  - copies, allocations, address-range queries and stream creation need a current context,
//    and a stream may only be used while its own context is current (CUDA_ERROR_INVALID_CONTEXT);
//  - KVIKIO_STANDIN_DEVICES (default 2) devices, each with a primary context;
//  - fault injection and counters through the kvikio_standin_* functions below;
//  - a rendezvous (kvikio_standin_rendezvous) that holds copies into or out of each device
//    until copies into N devices are in flight at once, so tests can tell concurrent
//    multi-device IO from IO that serialises on one lock.
#include <cuda.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr std::uintptr_t device_span = std::uintptr_t{1} << 34;  // 16 GiB of addresses a device
constexpr int max_devices            = 4;

struct Context {
  int device;
  int refcount{0};
  // The legacy default stream: work that a synchronous call left unfinished (see
  // cuMemcpyHtoD_v2), run before anything ordered after it.
  std::mutex null_mutex;
  std::mutex null_running;  // held while default-stream work runs, so waiters see it finished
  std::vector<std::function<void()>> null_pending;
};

enum class Kind { DEVICE, MANAGED, PINNED };

struct Alloc {
  std::uintptr_t base;
  std::size_t size;
  Kind kind;
  Context* ctx;
  char* backing;          // where the bytes really are (== base for host-accessible kinds)
  unsigned long long id;  // CU_POINTER_ATTRIBUTE_BUFFER_ID: never reused in the process
};

struct Stream {
  Context* ctx;
  bool blocking{true};  // waits for the legacy default stream (not CU_STREAM_NON_BLOCKING)
  std::mutex mutex;
  std::vector<std::function<void()>> pending;
};

struct State {
  std::mutex mutex;
  int devices{2};
  Context contexts[max_devices]{{0}, {1}, {2}, {3}};
  char* reserved{nullptr};
  std::uintptr_t next[max_devices]{};
  std::map<std::uintptr_t, Alloc> allocs;
  std::vector<Stream*> streams;
  std::size_t pinned_bytes{0};
  std::size_t peak_pinned_bytes{0};
  std::size_t pageable_async_copies{0};
  std::size_t async_copies{0};
  std::size_t pointer_queries{0};    // cuPointerGetAttribute calls
  std::size_t sync_copies{0};        // cuMemcpyHtoD and cuMemcpyDtoH calls
  bool touching_allocations{false};  // device allocations without a gap between them
  std::size_t stream_syncs{0};       // cuStreamSynchronize calls
  std::size_t ctx_syncs{0};          // cuCtxSynchronize calls
  bool initialised{false};
  // fault injection: fail the nth next call of `fail_fn` with `fail_code`
  std::string fail_fn;
  int fail_countdown{0};
  CUresult fail_code{CUDA_SUCCESS};

  State()
  {
    if (const char* env = std::getenv("KVIKIO_STANDIN_DEVICES")) {
      devices = std::max(0, std::min(max_devices, std::atoi(env)));
    }
    void* p  = ::mmap(nullptr,
                     device_span * max_devices,
                     PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1,
                     0);
    reserved = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
    for (int d = 0; d < max_devices; ++d) {
      next[d] = reinterpret_cast<std::uintptr_t>(reserved) + device_span * d;
    }
  }
};

State& st()
{
  static auto* s = new State();
  return *s;
}

thread_local std::vector<CUcontext> ctx_stack;

Context* current()
{
  return ctx_stack.empty() ? nullptr : reinterpret_cast<Context*>(ctx_stack.back());
}

// Armed by kvikio_standin_rendezvous: each copy (or cuFile transfer) into or out of a device
// waits until `parties` distinct devices have one in progress, or until the timeout, after
// which the rendezvous disarms itself and records that it was not met.
struct Rendezvous {
  std::mutex mutex;
  std::condition_variable cv;
  bool armed{false};
  bool met{false};
  int parties{0};
  int timeout_ms{0};
  std::set<int> arrived;
};

Rendezvous& rendezvous_state()
{
  static auto* r = new Rendezvous();
  return *r;
}

void rendezvous(const Context* ctx)
{
  if (ctx == nullptr) { return; }
  auto& r = rendezvous_state();
  std::unique_lock lock(r.mutex);
  if (!r.armed) { return; }
  r.arrived.insert(ctx->device);
  if (static_cast<int>(r.arrived.size()) >= r.parties) {
    r.met   = true;
    r.armed = false;
    r.cv.notify_all();
    return;
  }
  if (!r.cv.wait_for(lock, std::chrono::milliseconds(r.timeout_ms), [&] { return r.met; })) {
    r.armed = false;  // give up: the other devices' IO is not running alongside this one
    r.cv.notify_all();
  }
}

bool injected(const char* fn, CUresult* out)
{
  auto& s = st();
  std::lock_guard lock(s.mutex);
  if (s.fail_countdown > 0 && s.fail_fn == fn && --s.fail_countdown == 0) {
    *out = s.fail_code;
    return true;
  }
  return false;
}

#define STANDIN_INJECT(name)                                          \
  do {                                                                \
    CUresult injected_result{};                                       \
    if (injected(name, &injected_result)) { return injected_result; } \
  } while (0)

/// The allocation holding [p, p + n), or null. Caller holds the mutex.
const Alloc* find(std::uintptr_t p, std::size_t n)
{
  auto& s = st();
  auto it = s.allocs.upper_bound(p);
  if (it == s.allocs.begin()) { return nullptr; }
  --it;
  const Alloc& a = it->second;
  if (p < a.base || p - a.base > a.size || n > a.size - (p - a.base)) { return nullptr; }
  if (n == 0 && p == a.base + a.size && a.size != 0) { return nullptr; }
  return &a;
}

/// Host address backing device range [d, d + n), or null when it is not one allocation.
char* device_bytes(CUdeviceptr d, std::size_t n)
{
  auto& s = st();
  std::lock_guard lock(s.mutex);
  const Alloc* a = find(static_cast<std::uintptr_t>(d), n);
  if (a == nullptr) { return nullptr; }
  return a->backing + (static_cast<std::uintptr_t>(d) - a->base);
}

bool is_pinned(const void* p, std::size_t n)
{
  auto& s = st();
  std::lock_guard lock(s.mutex);
  const Alloc* a = find(reinterpret_cast<std::uintptr_t>(p), n);
  return a != nullptr && a->kind != Kind::DEVICE;
}

void flush_null(Context* ctx)
{
  if (ctx == nullptr) { return; }
  std::lock_guard running(ctx->null_running);
  std::vector<std::function<void()>> work;
  {
    std::lock_guard lock(ctx->null_mutex);
    work.swap(ctx->null_pending);
  }
  for (auto& w : work) {
    w();
  }
}

void flush(Stream* stream)
{
  std::vector<std::function<void()>> work;
  {
    std::lock_guard lock(stream->mutex);
    work.swap(stream->pending);
  }
  for (auto& w : work) {
    w();
  }
}

CUresult enqueue_copy(CUstream hstream, std::function<void()> copy, bool pinned)
{
  auto* ctx = current();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  auto& s = st();
  {
    std::lock_guard lock(s.mutex);
    ++s.async_copies;
    if (!pinned) { ++s.pageable_async_copies; }
  }
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (stream != nullptr && stream->ctx != ctx) { return CUDA_ERROR_INVALID_CONTEXT; }
  rendezvous(ctx);
  // The legacy default stream and blocking streams are ordered after earlier default-stream
  // work; a non-blocking stream is not, and may see device memory before it is written.
  if (stream == nullptr || stream->blocking) { flush_null(ctx); }
  if (stream == nullptr || !pinned) {
    // The null stream, and pageable memory, copy synchronously (as the real driver stages
    // pageable memory before returning).
    copy();
    return CUDA_SUCCESS;
  }
  std::lock_guard lock(stream->mutex);
  stream->pending.push_back(std::move(copy));
  return CUDA_SUCCESS;
}

CUresult alloc(CUdeviceptr* dptr, std::size_t n, Kind kind)
{
  auto* ctx = current();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  if (dptr == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  auto& s = st();
  std::lock_guard lock(s.mutex);
  static unsigned long long next_id = 0;
  Alloc a{};
  a.size = n;
  a.kind = kind;
  a.ctx  = ctx;
  a.id   = ++next_id;
  if (kind == Kind::DEVICE) {
    a.backing = static_cast<char*>(std::malloc(n == 0 ? 1 : n));
    if (a.backing == nullptr) { return CUDA_ERROR_OUT_OF_MEMORY; }
    // 512-byte aligned, with a gap so that neighbouring allocations never touch (unless a
    // test asks for touching ones, as a caching allocator hands out).
    a.base = s.next[ctx->device];
    s.next[ctx->device] += (n + (s.touching_allocations ? 0 : 4096) + 511) / 512 * 512;
  } else {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, n == 0 ? 1 : n) != 0) { return CUDA_ERROR_OUT_OF_MEMORY; }
    a.backing = static_cast<char*>(p);
    a.base    = reinterpret_cast<std::uintptr_t>(p);
  }
  s.allocs.emplace(a.base, a);
  *dptr = static_cast<CUdeviceptr>(a.base);
  return CUDA_SUCCESS;
}

CUresult release(std::uintptr_t p, bool host)
{
  auto& s = st();
  std::lock_guard lock(s.mutex);
  auto it = s.allocs.find(p);
  if (it == s.allocs.end() || ((it->second.kind == Kind::PINNED) != host)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (it->second.kind == Kind::PINNED) { s.pinned_bytes -= it->second.size; }
  std::free(it->second.backing);
  s.allocs.erase(it);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

// ---- test controls (not part of the CUDA API) ----
__attribute__((visibility("default"))) std::size_t kvikio_standin_pinned_bytes()
{
  std::lock_guard lock(st().mutex);
  return st().pinned_bytes;
}
__attribute__((visibility("default"))) std::size_t kvikio_standin_peak_pinned_bytes()
{
  std::lock_guard lock(st().mutex);
  return st().peak_pinned_bytes;
}
__attribute__((visibility("default"))) void kvikio_standin_reset_peak()
{
  std::lock_guard lock(st().mutex);
  st().peak_pinned_bytes = st().pinned_bytes;
}
__attribute__((visibility("default"))) std::size_t kvikio_standin_pageable_async_copies()
{
  std::lock_guard lock(st().mutex);
  return st().pageable_async_copies;
}
__attribute__((visibility("default"))) std::size_t kvikio_standin_async_copies()
{
  std::lock_guard lock(st().mutex);
  return st().async_copies;
}
/// How many cuPointerGetAttribute calls were made so far.
__attribute__((visibility("default"))) std::size_t kvikio_standin_pointer_queries()
{
  std::lock_guard lock(st().mutex);
  return st().pointer_queries;
}
/// How many synchronous copies (cuMemcpyHtoD, cuMemcpyDtoH) were made so far.
__attribute__((visibility("default"))) std::size_t kvikio_standin_sync_copies()
{
  std::lock_guard lock(st().mutex);
  return st().sync_copies;
}
/// Whether the next device allocations follow each other without a gap (a copy still may
/// not span two of them).
__attribute__((visibility("default"))) void kvikio_standin_touching_allocations(int on)
{
  std::lock_guard lock(st().mutex);
  st().touching_allocations = on != 0;
}
/// How many cuCtxSynchronize calls were made so far.
__attribute__((visibility("default"))) std::size_t kvikio_standin_ctx_syncs()
{
  std::lock_guard lock(st().mutex);
  return st().ctx_syncs;
}
/// How many cuStreamSynchronize calls were made so far.
__attribute__((visibility("default"))) std::size_t kvikio_standin_stream_syncs()
{
  std::lock_guard lock(st().mutex);
  return st().stream_syncs;
}
/// For the cuFile stand-in: the host bytes behind device range [ptr, ptr + n) after the
/// current context's default-stream work ran, or null when the range is not inside one
/// allocation; *ctx_ok says whether the allocation belongs to the current context.
__attribute__((visibility("default"))) char* kvikio_standin_backing(CUdeviceptr ptr,
                                                                    std::size_t n,
                                                                    int* ctx_ok)
{
  auto* ctx = current();
  rendezvous(ctx);
  flush_null(ctx);
  auto& s = st();
  std::lock_guard lock(s.mutex);
  const Alloc* a = find(static_cast<std::uintptr_t>(ptr), n);
  if (a == nullptr) { return nullptr; }
  *ctx_ok = a->ctx == ctx ? 1 : 0;
  return a->backing + (static_cast<std::uintptr_t>(ptr) - a->base);
}
/// Arms the rendezvous: the next copies wait until `parties` devices have one in progress
/// at once, each waiting at most `timeout_ms`.
__attribute__((visibility("default"))) void kvikio_standin_rendezvous(int parties, int timeout_ms)
{
  auto& r = rendezvous_state();
  std::lock_guard lock(r.mutex);
  r.armed      = true;
  r.met        = false;
  r.parties    = parties;
  r.timeout_ms = timeout_ms;
  r.arrived.clear();
}
/// Whether the last armed rendezvous saw all its parties at once.
__attribute__((visibility("default"))) int kvikio_standin_rendezvous_met()
{
  auto& r = rendezvous_state();
  std::lock_guard lock(r.mutex);
  return r.met ? 1 : 0;
}
/// The `nth` next call of the function named `fn` (e.g. "cuMemcpyHtoDAsync") returns `code`.
__attribute__((visibility("default"))) void kvikio_standin_fail(const char* fn, int nth, int code)
{
  std::lock_guard lock(st().mutex);
  st().fail_fn        = fn;
  st().fail_countdown = nth;
  st().fail_code      = static_cast<CUresult>(code);
}

// ---- the driver API ----
CUresult cuInit(unsigned int)
{
  if (const char* env = std::getenv("KVIKIO_STANDIN_INIT_ERROR")) {
    return static_cast<CUresult>(std::atoi(env));
  }
  if (st().reserved == nullptr) { return CUDA_ERROR_OUT_OF_MEMORY; }
  st().initialised = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* v)
{
  *v = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* n)
{
  *n = st().devices;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* dev, int ordinal)
{
  if (ordinal < 0 || ordinal >= st().devices) { return CUDA_ERROR_INVALID_DEVICE; }
  *dev = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev)
{
  if (dev < 0 || dev >= st().devices) { return CUDA_ERROR_INVALID_DEVICE; }
  std::lock_guard lock(st().mutex);
  ++st().contexts[dev].refcount;
  *ctx = reinterpret_cast<CUcontext>(&st().contexts[dev]);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
  if (dev < 0 || dev >= st().devices) { return CUDA_ERROR_INVALID_DEVICE; }
  std::lock_guard lock(st().mutex);
  --st().contexts[dev].refcount;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* ctx)
{
  *ctx = ctx_stack.empty() ? nullptr : ctx_stack.back();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
  if (ctx_stack.empty()) {
    if (ctx != nullptr) { ctx_stack.push_back(ctx); }
  } else if (ctx == nullptr) {
    ctx_stack.pop_back();
  } else {
    ctx_stack.back() = ctx;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
  STANDIN_INJECT("cuCtxPushCurrent");
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  ctx_stack.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* ctx)
{
  if (ctx_stack.empty()) { return CUDA_ERROR_INVALID_CONTEXT; }
  if (ctx != nullptr) { *ctx = ctx_stack.back(); }
  ctx_stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* dev)
{
  auto* c = current();
  if (c == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  *dev = c->device;
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attr, CUdeviceptr ptr)
{
  auto& s = st();
  std::lock_guard lock(s.mutex);
  ++s.pointer_queries;
  const Alloc* a = find(static_cast<std::uintptr_t>(ptr), 0);
  if (a == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) =
        a->kind == Kind::PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(a->ctx);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned int*>(data) = a->kind == Kind::MANAGED ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = a->ctx->device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = a->id;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, std::size_t* size, CUdeviceptr ptr)
{
  // As on the real driver (seen on an H200, driver 580): a context must be current.
  if (current() == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  auto& s = st();
  std::lock_guard lock(s.mutex);
  const Alloc* a = find(static_cast<std::uintptr_t>(ptr), 0);
  if (a == nullptr || a->kind == Kind::PINNED) { return CUDA_ERROR_NOT_FOUND; }
  if (base != nullptr) { *base = static_cast<CUdeviceptr>(a->base); }
  if (size != nullptr) { *size = a->size; }
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, std::size_t n)
{
  STANDIN_INJECT("cuMemAlloc");
  return alloc(dptr, n, Kind::DEVICE);
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, std::size_t n, unsigned int)
{
  return alloc(dptr, n, Kind::MANAGED);
}

CUresult cuMemFree_v2(CUdeviceptr p) { return release(static_cast<std::uintptr_t>(p), false); }

CUresult cuMemHostAlloc(void** pp, std::size_t n, unsigned int)
{
  STANDIN_INJECT("cuMemHostAlloc");
  CUdeviceptr p = 0;
  CUresult r    = alloc(&p, n, Kind::PINNED);
  if (r != CUDA_SUCCESS) { return r; }
  *pp     = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  auto& s = st();
  std::lock_guard lock(s.mutex);
  s.pinned_bytes += n;
  s.peak_pinned_bytes = std::max(s.peak_pinned_bytes, s.pinned_bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* p) { return release(reinterpret_cast<std::uintptr_t>(p), true); }

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, std::size_t n)
{
  STANDIN_INJECT("cuMemcpyHtoD");
  {
    std::lock_guard lock(st().mutex);
    ++st().sync_copies;
  }
  auto* ctx = current();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  char* d = device_bytes(dst, n);
  if (d == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  if (is_pinned(src, n)) {
    flush_null(ctx);
    std::memcpy(d, src, n);
    return CUDA_SUCCESS;
  }
  // From pageable memory the real driver returns once the source is staged, before the DMA
  // into device memory has finished: model that by finishing it on the default stream.
  auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                    static_cast<const char*>(src) + n);
  std::lock_guard lock(ctx->null_mutex);
  ctx->null_pending.push_back([d, staged] { std::memcpy(d, staged->data(), staged->size()); });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, std::size_t n)
{
  {
    std::lock_guard lock(st().mutex);
    ++st().sync_copies;
  }
  auto* ctx = current();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  char* s = device_bytes(src, n);
  if (s == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  flush_null(ctx);
  std::memcpy(dst, s, n);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, std::size_t n, CUstream stream)
{
  STANDIN_INJECT("cuMemcpyHtoDAsync");
  char* d = device_bytes(dst, n);
  if (d == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  return enqueue_copy(
    stream, [d, src, n] { std::memcpy(d, src, n); }, is_pinned(src, n));
}

CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, std::size_t n, CUstream stream)
{
  STANDIN_INJECT("cuMemcpyDtoHAsync");
  char* s = device_bytes(src, n);
  if (s == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  return enqueue_copy(
    stream, [dst, s, n] { std::memcpy(dst, s, n); }, is_pinned(dst, n));
}

CUresult cuStreamCreate(CUstream* stream, unsigned int flags)
{
  auto* ctx = current();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  auto* s     = new Stream{};
  s->ctx      = ctx;
  s->blocking = (flags & CU_STREAM_NON_BLOCKING) == 0;
  std::lock_guard lock(st().mutex);
  st().streams.push_back(s);
  *stream = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream stream)
{
  if (stream == nullptr) { return CUDA_ERROR_INVALID_HANDLE; }
  auto* s = reinterpret_cast<Stream*>(stream);
  flush(s);
  std::lock_guard lock(st().mutex);
  auto& all = st().streams;
  for (auto it = all.begin(); it != all.end(); ++it) {
    if (*it == s) {
      all.erase(it);
      delete s;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_HANDLE;
}

/// Runs the work queued on every stream of the current context, the legacy one included.
static CUresult flush_current_context()
{
  auto* ctx = current();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  flush_null(ctx);
  std::vector<Stream*> mine;
  {
    std::lock_guard lock(st().mutex);
    for (auto* s : st().streams) {
      if (s->ctx == ctx) { mine.push_back(s); }
    }
  }
  for (auto* s : mine) {
    flush(s);
  }
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream)
{
  STANDIN_INJECT("cuStreamSynchronize");
  {
    std::lock_guard lock(st().mutex);
    ++st().stream_syncs;
  }
  if (stream != nullptr) {
    flush(reinterpret_cast<Stream*>(stream));
    return CUDA_SUCCESS;
  }
  // The legacy default stream waits for every stream of the current context.
  return flush_current_context();
}

CUresult cuCtxSynchronize()
{
  STANDIN_INJECT("cuCtxSynchronize");
  {
    std::lock_guard lock(st().mutex);
    ++st().ctx_syncs;
  }
  return flush_current_context();
}

CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* data)
{
  if (stream == nullptr) {
    fn(data);
    return CUDA_SUCCESS;
  }
  auto* s = reinterpret_cast<Stream*>(stream);
  std::lock_guard lock(s->mutex);
  s->pending.push_back([fn, data] { fn(data); });
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char** name)
{
  switch (r) {
    case CUDA_SUCCESS:
      *name = "CUDA_SUCCESS";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *name = "CUDA_ERROR_INVALID_VALUE";
      break;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *name = "CUDA_ERROR_OUT_OF_MEMORY";
      break;
    case CUDA_ERROR_NOT_INITIALIZED:
      *name = "CUDA_ERROR_NOT_INITIALIZED";
      break;
    case CUDA_ERROR_NO_DEVICE:
      *name = "CUDA_ERROR_NO_DEVICE";
      break;
    case CUDA_ERROR_INVALID_DEVICE:
      *name = "CUDA_ERROR_INVALID_DEVICE";
      break;
    case CUDA_ERROR_INVALID_CONTEXT:
      *name = "CUDA_ERROR_INVALID_CONTEXT";
      break;
    case CUDA_ERROR_INVALID_HANDLE:
      *name = "CUDA_ERROR_INVALID_HANDLE";
      break;
    case CUDA_ERROR_NOT_FOUND:
      *name = "CUDA_ERROR_NOT_FOUND";
      break;
    case CUDA_ERROR_LAUNCH_FAILED:
      *name = "CUDA_ERROR_LAUNCH_FAILED";
      break;
    default:
      *name = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
