#include "device/pointer.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <kvikio/error.hpp>

#include "shim/cuda_api.hpp"

namespace kvikio::detail {
namespace {

std::string hex(std::uintptr_t p)
{
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), digits[p % 16]);
    p /= 16;
  } while (p != 0);
  return "0x" + out;
}

}  // namespace

PointerInfo get_pointer_info(const void* ptr)
{
  PointerInfo info;
  const auto& api = CudaAPI::instance();
  if (!api.available() || ptr == nullptr) { return info; }
  const auto dptr       = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(ptr));
  unsigned int mem_type = 0;
  CUresult r = api.PointerGetAttribute(&mem_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr);
  // Memory the driver does not know (malloc, mmap, the stack) is reported as invalid. In a
  // child forked after the parent initialised CUDA, every driver call answers NOT_INITIALIZED:
  // no device memory can exist there, so the buffer is host memory (seen on the H200).
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_INITIALIZED ||
      (r == CUDA_SUCCESS && mem_type == 0)) {
    return info;
  }
  cuda_check(r, "cuPointerGetAttribute(MEMORY_TYPE)", "for pointer " + hex(dptr));
  // The attributes of an allocation never change, and its buffer ID is never reused in the
  // process: the last few allocations this thread saw answer a repeated request with one
  // more call instead of four or five (and a context push) (issue 14).
  struct Cached {
    unsigned long long id{0};
    PointerInfo info;
  };
  thread_local std::array<Cached, 4> cache{};
  thread_local std::size_t next_slot = 0;
  unsigned long long buffer_id       = 0;
  if (api.PointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, dptr) != CUDA_SUCCESS) {
    buffer_id = 0;
  }
  if (buffer_id != 0) {
    for (const auto& c : cache) {
      if (c.id == buffer_id) { return c.info; }
    }
  }
  unsigned int managed = 0;
  api.PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, dptr);
  CUcontext ctx = nullptr;
  if (api.PointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, dptr) != CUDA_SUCCESS ||
      ctx == nullptr) {
    // Memory from the virtual memory API (cuMemMap) has no owning context: use the primary
    // context of the device it lives on.
    int ordinal = 0;
    if (api.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr) ==
        CUDA_SUCCESS) {
      ctx = primary_context(ordinal);
    }
  }
  info.context = ctx;
  if (managed != 0) {
    info.kind = MemoryKind::MANAGED;
  } else if (mem_type == CU_MEMORYTYPE_HOST) {
    info.kind = MemoryKind::PINNED_HOST;
  } else {
    info.kind         = MemoryKind::DEVICE;
    CUdeviceptr base  = 0;
    std::size_t bytes = 0;
    // Unlike the pointer attributes, the address range query needs a current context.
    ContextGuard guard(ctx);
    cuda_check(api.MemGetAddressRange(&base, &bytes, dptr),
               "cuMemGetAddressRange",
               "for device pointer " + hex(dptr));
    info.base       = static_cast<std::uintptr_t>(base);
    info.alloc_size = bytes;
  }
  if (buffer_id != 0) {
    cache[next_slot] = {buffer_id, info};
    next_slot        = (next_slot + 1) % cache.size();
  }
  return info;
}

namespace {

/// Reads a hexadecimal number at the front of `s`, consuming it; false when there is none.
bool take_hex(std::string_view& s, std::uintptr_t& out)
{
  std::size_t i    = 0;
  std::uintptr_t v = 0;
  for (; i < s.size() && i < 2 * sizeof(std::uintptr_t); ++i) {
    const char c = s[i];
    int d        = 0;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      break;
    }
    v = v * 16 + static_cast<std::uintptr_t>(d);
  }
  if (i == 0) { return false; }
  s.remove_prefix(i);
  out = v;
  return true;
}

/// Drops the field at the front of `s` and the spaces after it; false when nothing followed.
bool skip_field(std::string_view& s)
{
  const auto space = s.find(' ');
  if (space == std::string_view::npos) { return false; }
  s.remove_prefix(space);
  const auto next = s.find_first_not_of(' ');
  s.remove_prefix(next == std::string_view::npos ? s.size() : next);
  return true;
}

}  // namespace

HostMappings HostMappings::parse(std::string_view maps)
{
  // Each line: "start-end perms offset dev inode [path]", addresses in hex; a line that does
  // not read so is left out (its buffers are looked up, as any outside every range).
  HostMappings out;
  while (!maps.empty()) {
    const auto eol        = maps.find('\n');
    std::string_view line = maps.substr(0, eol);
    maps.remove_prefix(eol == std::string_view::npos ? maps.size() : eol + 1);
    std::uintptr_t start = 0;
    std::uintptr_t end   = 0;
    if (!take_hex(line, start) || line.empty() || line[0] != '-') { continue; }
    line.remove_prefix(1);
    if (!take_hex(line, end) || end <= start || line.empty() || line[0] != ' ') { continue; }
    line.remove_prefix(1);
    if (line.size() < 4 || line[0] != 'r' || line[1] != 'w') { continue; }
    // perms, offset, device, inode: what is left is the path (or nothing).
    if (!skip_field(line) || !skip_field(line) || !skip_field(line)) { continue; }
    skip_field(line);
    if (line.starts_with("/dev/") || line.starts_with("anon_inode:")) { continue; }
    out.ranges_.emplace_back(start, end);
  }
  std::sort(out.ranges_.begin(), out.ranges_.end());
  return out;
}

HostMappings HostMappings::read_self()
{
  std::string text;
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) { return {}; }
  std::size_t used = 0;
  bool failed      = false;
  for (;;) {
    text.resize(used + 64 * 1024);
    const ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n > 0) {
      used += static_cast<std::size_t>(n);
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      failed = true;  // the text may end inside a line (a cut path): use none of it
      break;
    }
  }
  ::close(fd);
  if (failed) { return {}; }
  text.resize(used);
  return parse(text);
}

const std::pair<std::uintptr_t, std::uintptr_t>* HostMappings::find(const void* ptr,
                                                                    std::size_t size) const noexcept
{
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  auto it      = std::upper_bound(
    ranges_.begin(), ranges_.end(), p, [](std::uintptr_t v, const auto& r) { return v < r.first; });
  if (it == ranges_.begin()) { return nullptr; }
  --it;
  return p < it->second && size <= it->second - p ? &*it : nullptr;
}

namespace {

// PROCMAP_QUERY's interface (include/uapi/linux/fs.h, Linux 6.11), declared here because the
// build machines' kernel headers may predate it; the kernel checks `size` against its own.
struct ProcmapQuery {
  std::uint64_t size;
  std::uint64_t query_flags;
  std::uint64_t query_addr;
  std::uint64_t vma_start;
  std::uint64_t vma_end;
  std::uint64_t vma_flags;
  std::uint64_t vma_page_size;
  std::uint64_t vma_offset;
  std::uint64_t inode;
  std::uint32_t dev_major;
  std::uint32_t dev_minor;
  std::uint32_t vma_name_size;
  std::uint32_t build_id_size;
  std::uint64_t vma_name_addr;
  std::uint64_t build_id_addr;
};
static_assert(sizeof(ProcmapQuery) == 104);
constexpr unsigned long procmap_query_request = _IOWR('f', 17, ProcmapQuery);
// Room for any path (PATH_MAX): a longer name fails the ioctl (ENAMETOOLONG).
using MappingName                    = std::array<char, 4096>;
constexpr std::uint64_t vma_readable = 0x01;
constexpr std::uint64_t vma_writable = 0x02;

/// Asks for the mapping holding `addr`, its name into `name`; false when there is none or the
/// ioctl failed.
bool query_mapping(int fd, std::uintptr_t addr, ProcmapQuery& q, MappingName& name)
{
  q               = ProcmapQuery{};
  q.size          = sizeof q;
  q.query_addr    = addr;
  q.vma_name_size = static_cast<std::uint32_t>(name.size());
  q.vma_name_addr = reinterpret_cast<std::uintptr_t>(name.data());
  return ::ioctl(fd, procmap_query_request, &q) == 0;
}

}  // namespace

MappingQuery::MappingQuery()
{
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) { return; }
  // Probe with an address that is surely mapped: this object's own.
  ProcmapQuery q{};
  MappingName name;
  if (query_mapping(fd, reinterpret_cast<std::uintptr_t>(&q), q, name)) {
    fd_ = fd;
  } else {
    ::close(fd);
  }
}

MappingQuery::~MappingQuery()
{
  if (fd_ >= 0) { ::close(fd_); }
}

std::pair<std::uintptr_t, std::uintptr_t> MappingQuery::find(const void* ptr,
                                                             std::size_t size) const noexcept
{
  if (fd_ < 0) { return {0, 0}; }
  ProcmapQuery q{};
  MappingName name;  // a name that does not fit fails the ioctl: the buffer is looked up
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  if (!query_mapping(fd_, p, q, name)) { return {0, 0}; }
  // The rules of HostMappings::parse: readable and writable, and not a device file or an
  // anon_inode object (where the driver maps pinned, managed and device memory).
  const std::string_view path(name.data(), q.vma_name_size > 0 ? q.vma_name_size - 1 : 0);
  if ((q.vma_flags & (vma_readable | vma_writable)) != (vma_readable | vma_writable) ||
      path.starts_with("/dev/") || path.starts_with("anon_inode:") || p < q.vma_start ||
      p >= q.vma_end || size > q.vma_end - p) {
    return {0, 0};
  }
  return {q.vma_start, q.vma_end};
}

void check_device_range(const PointerInfo& info,
                        const void* ptr,
                        std::size_t size,
                        const std::string& what)
{
  if (info.kind != MemoryKind::DEVICE) { return; }
  const auto p   = reinterpret_cast<std::uintptr_t>(ptr);
  const auto end = info.base + info.alloc_size;
  if (p < info.base || p > end || size > end - p) {
    throw std::out_of_range(what + ": device buffer " + hex(p) + " + " + std::to_string(size) +
                            " bytes exceeds its allocation [" + hex(info.base) + ", " + hex(end) +
                            ") of " + std::to_string(info.alloc_size) + " bytes (offset " +
                            std::to_string(p - info.base) + " into it)");
  }
}

ContextGuard::ContextGuard(CUcontext ctx)
{
  if (ctx == nullptr) { return; }
  const auto& api   = CudaAPI::instance();
  CUcontext current = nullptr;
  api.CtxGetCurrent(&current);
  if (current == ctx) { return; }
  cuda_check(api.CtxPushCurrent(ctx), "cuCtxPushCurrent");
  pushed_ = true;
}

ContextGuard::~ContextGuard() noexcept
{
  if (pushed_) {
    CUcontext popped = nullptr;
    CudaAPI::instance().CtxPopCurrent(&popped);
  }
}

namespace {

struct ThreadStreams {
  std::map<CUcontext, CUstream> streams;
  ~ThreadStreams()
  {
    const auto& api = CudaAPI::instance();
    for (auto [ctx, stream] : streams) {
      // At process exit the driver may already be torn down; errors are of no consequence.
      if (api.CtxPushCurrent(ctx) == CUDA_SUCCESS) {
        api.StreamDestroy(stream);
        CUcontext popped = nullptr;
        api.CtxPopCurrent(&popped);
      }
    }
  }
};

}  // namespace

CUstream thread_stream(CUcontext ctx)
{
  thread_local ThreadStreams local;
  auto it = local.streams.find(ctx);
  if (it != local.streams.end()) { return it->second; }
  CUstream stream = nullptr;
  // A blocking stream (not CU_STREAM_NON_BLOCKING): its copies wait for work queued before
  // them on the legacy default stream, such as a cuMemcpyHtoD from pageable memory that
  // returned before its DMA finished (seen on the H200), so IO sees the data it was given.
  cuda_check(CudaAPI::instance().StreamCreate(&stream, CU_STREAM_DEFAULT), "cuStreamCreate");
  local.streams.emplace(ctx, stream);
  return stream;
}

void wait_for_queued_work(CUcontext ctx, const std::string& what)
{
  ContextGuard guard(ctx);
  cuda_check(CudaAPI::instance().CtxSynchronize(), "cuCtxSynchronize", what);
}

CUcontext primary_context(int ordinal)
{
  static std::mutex mutex;
  static std::map<int, CUcontext> retained;
  std::lock_guard lock(mutex);
  if (auto it = retained.find(ordinal); it != retained.end()) { return it->second; }
  const auto& api =
    *cuda_api_or_throw("retaining the primary context of device " + std::to_string(ordinal));
  CUdevice dev = 0;
  cuda_check(api.DeviceGet(&dev, ordinal), "cuDeviceGet", "for device " + std::to_string(ordinal));
  CUcontext ctx = nullptr;
  cuda_check(api.DevicePrimaryCtxRetain(&ctx, dev),
             "cuDevicePrimaryCtxRetain",
             "for device " + std::to_string(ordinal));
  retained.emplace(ordinal, ctx);
  return ctx;
}

}  // namespace kvikio::detail
