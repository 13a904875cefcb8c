// Batches of reads and writes (kvikio/batch_io.hpp): every request checked first, then host
// requests spread over the pool's threads, each submitting its share through its own
// io_uring (or plain calls), and device requests through the usual device path.
#include <kvikio/batch_io.hpp>

#include <algorithm>
#include <cstdint>
#include <atomic>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <variant>

#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>

#include "api/open_handle.hpp"
#include "core/open_file.hpp"
#include "core/parallel_io.hpp"
#include "core/posix_io.hpp"
#include "core/uring_io.hpp"
#include "device/device_batch.hpp"
#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"

namespace kvikio {
namespace detail {
std::size_t batch_move_piece(Direction direction,
                             const OpenHandle& handle,
                             const PointerInfo& info,
                             char* buf,
                             std::size_t size,
                             std::size_t offset);
}  // namespace detail

namespace {

using detail::Direction;

/// Runs `check`, prefixing the message of what it throws with the request's index (built
/// only then: a batch may hold many thousands of requests).
template <typename F>
void with_index(std::size_t i, F&& check)
{
  auto where = [i] { return "batch request " + std::to_string(i) + ": "; };
  try {
    check();
  } catch (const std::out_of_range& e) {
    throw std::out_of_range(where() + e.what());
  } catch (const std::overflow_error& e) {
    throw std::overflow_error(where() + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where() + e.what());
  }
}

struct Item {
  detail::OpenHandle* handle;  // kept alive by BatchState::handles
  detail::PointerInfo info;
  char* buf;
  std::size_t size;  // clamped to the end of the file for reads
  std::size_t offset;
  std::size_t asked;  // the size asked for, which a device buffer must hold
};

/// A part of items[item] run on the pool: `size` bytes from `buf_offset` into the request.
struct Piece {
  std::size_t item;
  std::size_t buf_offset;
  std::size_t size;
};

/// pool_pieces[begin, end), one job's share: a group staged through one pinned buffer
/// (detail::device_batch_io), or one piece alone through detail::batch_move_piece.
struct PoolGroup {
  std::size_t begin;
  std::size_t end;
  bool staged;
};

/// Every request of the batch and its results; shared by the jobs on the pool.
struct BatchState {
  Direction direction;
  bool uring{false};      // host requests through io_uring, else POSIX calls on the pool threads
  bool direct_io{false};  // the setting for `direction`, read once per batch
  std::vector<std::shared_ptr<detail::OpenHandle>> handles;  // each file once
  std::vector<Item> items;
  std::vector<detail::UringRequest> host;  // host requests, in slices of `chunk`
  std::vector<std::size_t> host_index;     // host[k] is a piece of items[host_index[k]]
  std::vector<Piece> pool_pieces;          // device pieces, run in pool_groups on the pool
  std::vector<PoolGroup> pool_groups;      // what the jobs take, one by one
  std::size_t chunk{1};                    // host requests per slice
  std::atomic<std::size_t> next_chunk{0};
  std::atomic<std::size_t> next_item{0};
  std::atomic<std::size_t> remaining_jobs{0};
  std::atomic<std::size_t> bytes{0};
  std::mutex error_mutex;
  std::size_t error_index{std::numeric_limits<std::size_t>::max()};
  std::exception_ptr error;
  std::promise<std::size_t> promise;
  // The pointer attributes pass: the lowest-numbered request whose lookup threw, and what.
  std::size_t info_error_index{std::numeric_limits<std::size_t>::max()};
  std::exception_ptr info_error;

  void fail(std::size_t index, std::exception_ptr e)
  {
    std::lock_guard lock(error_mutex);
    if (index < error_index) {
      error_index = index;
      error       = std::move(e);
    }
  }
  void run() noexcept
  {
    // Slices of host requests, each on this thread's own ring (or plain calls): one atomic
    // step per slice, not per request, and the bytes summed locally.
    const std::size_t chunks = (host.size() + chunk - 1) / chunk;
    std::size_t moved        = 0;
    for (std::size_t c = next_chunk++; c < chunks; c = next_chunk++) {
      const std::size_t begin = c * chunk;
      const std::size_t n     = std::min(chunk, host.size() - begin);
      std::span<detail::UringRequest> share(host.data() + begin, n);
      if (uring) {
        detail::uring_io(direction, share);
        for (std::size_t k = begin; k < begin + n; ++k) {
          moved += host[k].done;
          if (host[k].error) { fail(host_index[k], host[k].error); }
        }
        continue;
      }
      for (std::size_t k = begin; k < begin + n; ++k) {
        const auto& r = host[k];
        try {
          moved += detail::posix_host_io(
            direction, items[host_index[k]].handle->file, r.buf, r.size, r.offset, direct_io);
        } catch (...) {
          fail(host_index[k], std::current_exception());
        }
      }
    }
    std::vector<detail::DeviceBatchPiece> staged;
    const detail::DeviceBatchFail report = [this](std::size_t i, std::exception_ptr e) {
      fail(i, std::move(e));
    };
    for (std::size_t g = next_item++; g < pool_groups.size(); g = next_item++) {
      const auto& group = pool_groups[g];
      if (group.staged) {
        staged.clear();
        for (std::size_t k = group.begin; k < group.end; ++k) {
          const auto& piece = pool_pieces[k];
          const auto& it    = items[piece.item];
          staged.push_back({&it.handle->file,
                            it.info.context,
                            it.buf + piece.buf_offset,
                            piece.size,
                            it.offset + piece.buf_offset,
                            piece.item});
        }
        moved += detail::device_batch_io(direction, staged, uring, direct_io, report);
        continue;
      }
      const auto& piece = pool_pieces[group.begin];
      const auto& it    = items[piece.item];
      try {
        moved += detail::batch_move_piece(direction,
                                          *it.handle,
                                          it.info,
                                          it.buf + piece.buf_offset,
                                          piece.size,
                                          it.offset + piece.buf_offset);
      } catch (...) {
        fail(piece.item, std::current_exception());
      }
    }
    bytes += moved;
    if (remaining_jobs.fetch_sub(1) == 1) { finish(); }
  }
  /// Splits pool_pieces into pool_groups. Small pieces of files without cuFile (the POSIX
  /// path move_piece takes) are staged in groups of one context, sized to give each of
  /// `threads` a few groups (as the host slices are) but never more than a pinned buffer
  /// holds: one synchronisation per group instead of one copy call per piece (issue 14). The
  /// rest (cuFile, large pieces) run one by one as before.
  void group_pool_pieces(std::size_t threads)
  {
    auto stageable = [&](const Piece& p) {
      return !items[p.item].handle->cufile && p.size <= detail::device_batch_piece_max;
    };
    std::size_t staged_bytes = 0;
    for (const auto& p : pool_pieces) {
      if (stageable(p)) { staged_bytes += p.size; }
    }
    constexpr std::size_t min_group = 64 * 1024;  // 16 pieces of 4 KiB
    const std::size_t shares        = threads <= 1 ? 1 : threads * 4;
    const std::size_t target =
      std::min(std::max(staged_bytes / shares, min_group), defaults::bounce_buffer_size());
    for (std::size_t i = 0; i < pool_pieces.size();) {
      if (!stageable(pool_pieces[i])) {
        pool_groups.push_back({i, i + 1, false});
        ++i;
        continue;
      }
      const CUcontext ctx = items[pool_pieces[i].item].info.context;
      std::size_t end     = i + 1;
      std::size_t filled  = pool_pieces[i].size;
      while (end < pool_pieces.size() && stageable(pool_pieces[end]) &&
             items[pool_pieces[end].item].info.context == ctx &&
             pool_pieces[end].size <= target - std::min(target, filled)) {
        filled += pool_pieces[end].size;
        ++end;
      }
      pool_groups.push_back({i, end, true});
      i = end;
    }
  }
  void finish()
  {
    if (error) {
      promise.set_exception(error);
    } else {
      promise.set_value(bytes.load());
    }
  }
};

bool use_uring()
{
  const auto setting = std::get<std::string>(defaults::get("batch_backend"));
  if (setting == "thread_pool") { return false; }
  if (setting == "io_uring" && !detail::uring_available()) {
    throw std::runtime_error("batch_backend is io_uring, but io_uring is not available: " +
                             detail::uring_unavailable_reason());
  }
  return detail::uring_available();
}

/// The pointer attributes of every request (get_pointer_info, one driver call or more each).
/// With a CUDA driver and a large batch the lookups are spread over the pool in blocks, the
/// caller taking blocks too and waiting only for blocks that a pool thread took: so the call
/// still checks every request before any IO starts, and never waits on a busy pool for a block
/// nobody took. Within a block, a request inside the device allocation of the one before
/// reuses its attributes. A lookup that throws is kept (lowest index) in the state.
///
/// The driver serialises pointer queries on a lock of its own (~0.7 us each on an H200), so
/// spreading them over the pool does not make 20000 of them cheap (issue 14). A large batch
/// with a driver therefore reads the process's mappings once and takes a buffer lying inside
/// one plain read-write mapping as host memory without a query (detail::HostMappings says why
/// device memory is never there); only the rest is looked up. Pinned or managed memory taken
/// so is plain process memory too, and every host-accessible kind goes the same host path.
struct PointerPass {
  static constexpr std::size_t block = 256;
  // From this many requests the mappings are read. The text costs ~0.35 us a line to read
  // (2039 lines: 0.7 ms, measured on the 2-core build machine) and a process using CUDA has
  // some hundreds of lines, while a host buffer's query costs ~0.7 us under the driver's lock:
  // below this many requests the queries cost about what the reading would.
  static constexpr std::size_t mappings_from = 512;
  std::shared_ptr<BatchState> state;
  std::size_t blocks;
  detail::HostMappings mappings;  // empty: every buffer is looked up
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> finished{0};

  PointerPass(std::shared_ptr<BatchState> s, std::size_t n, detail::HostMappings m)
    : state(std::move(s)), blocks((n + block - 1) / block), mappings(std::move(m))
  {
  }

  void work() noexcept
  {
    auto& items = state->items;
    for (std::size_t b = next++; b < blocks; b = next++) {
      detail::PointerInfo last;
      for (std::size_t i = b * block; i < std::min(items.size(), (b + 1) * block); ++i) {
        auto& it = items[i];
        if (it.asked == 0) { continue; }
        const auto p = reinterpret_cast<std::uintptr_t>(it.buf);
        if (last.kind == detail::MemoryKind::DEVICE && p >= last.base &&
            p - last.base < last.alloc_size) {
          it.info = last;  // the same live allocation: the same attributes
          continue;
        }
        if (mappings.contains(it.buf, it.asked)) {
          it.info = detail::PointerInfo{};  // plain host memory
          continue;
        }
        try {
          it.info = detail::get_pointer_info(it.buf);
          last    = it.info;
        } catch (...) {
          std::lock_guard lock(state->error_mutex);
          if (i < state->info_error_index) {
            state->info_error_index = i;
            state->info_error       = std::current_exception();
          }
        }
      }
      if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == blocks) { finished.notify_all(); }
    }
  }

  static void run(const std::shared_ptr<BatchState>& state, bool parallel)
  {
    const std::size_t n = state->items.size();
    const bool driver   = detail::CudaAPI::instance().available();
    const bool use_maps = parallel && driver && n >= mappings_from;
    auto pass           = std::make_shared<PointerPass>(
      state, n, use_maps ? detail::HostMappings::read_self() : detail::HostMappings{});
    auto& pool                = defaults::thread_pool();
    const std::size_t helpers = parallel && n >= 4 * block && driver
                                  ? std::min<std::size_t>(pool.get_thread_count(), pass->blocks - 1)
                                  : 0;
    for (std::size_t h = 0; h < helpers; ++h) {
      try {
        pool.detach_task([pass]() noexcept { pass->work(); });
      } catch (...) {
        break;  // the caller takes the blocks itself
      }
    }
    pass->work();
    for (std::size_t f = pass->finished.load(std::memory_order_acquire); f < pass->blocks;
         f             = pass->finished.load(std::memory_order_acquire)) {
      pass->finished.wait(f, std::memory_order_acquire);
    }
  }
};

/// The checks and set-up of a batch run on the calling thread, serially, so they cost little
/// per request: each file is looked up, checked and measured once (not once per request), and
/// a request inside the device allocation of the one before reuses its pointer attributes.
/// `request(i)` gives (FileHandle*, buf, size, file_offset) of request i.
template <typename Request>
std::future<std::size_t> run_batch(Direction direction, std::size_t count, Request request)
{
  const char* op   = direction == Direction::read ? "pread_batch" : "pwrite_batch";
  auto state       = std::make_shared<BatchState>();
  state->direction = direction;
  state->uring     = use_uring();
  state->direct_io = direction == Direction::read ? defaults::auto_direct_io_read()
                                                  : defaults::auto_direct_io_write();
  state->items.reserve(count);
  const FileHandle* last_file = nullptr;
  detail::OpenHandle* handle  = nullptr;
  std::size_t file_size       = 0;  // of `handle`, for reads
  std::unordered_map<const FileHandle*, std::pair<detail::OpenHandle*, std::size_t>> files;
  // The checks that need no driver, request by request; the first failure stops them (its
  // error is raised after the pointer checks of the requests before it, so the lowest-numbered
  // bad request is the one reported).
  std::exception_ptr bad;
  for (std::size_t i = 0; i < count && !bad; ++i) {
    const FileIORequest r = request(i);
    try {
      with_index(i, [&] {
        if (r.file == nullptr) { throw std::invalid_argument(std::string(op) + ": null file"); }
        if (r.file != last_file) {
          auto known = files.find(r.file);
          if (known == files.end()) {
            const auto& shared = detail::FileHandleAccess::state(*r.file);
            if (!shared) {
              throw std::invalid_argument("IO on closed file '" + r.file->path() + "'");
            }
            shared->file.require(direction);
            // Reads stop at the end of the file: sizes are clamped once here, so that every
            // path (io_uring, plain calls, the device pipeline) gives the same short count.
            const std::size_t n = direction == Direction::read ? shared->file.nbytes() : 0;
            state->handles.push_back(shared);
            known = files.emplace(r.file, std::make_pair(shared.get(), n)).first;
          }
          last_file = r.file;
          handle    = known->second.first;
          file_size = known->second.second;
        }
        constexpr auto max_off = static_cast<std::size_t>(std::numeric_limits<off_t>::max());
        if (r.file_offset > max_off || r.size > max_off - r.file_offset) {
          throw std::overflow_error("file offset " + std::to_string(r.file_offset) + " plus size " +
                                    std::to_string(r.size) +
                                    " overflows the largest file offset for '" + r.file->path() +
                                    "'");
        }
        std::size_t size = r.size;
        if (direction == Direction::read && size > 0) {
          size = r.file_offset >= file_size ? 0 : std::min(size, file_size - r.file_offset);
        }
        state->items.push_back(
          {handle, detail::PointerInfo{}, static_cast<char*>(r.buf), size, r.file_offset, r.size});
      });
    } catch (...) {
      bad = std::current_exception();
    }
  }
  PointerPass::run(state, !bad);
  for (std::size_t i = 0; i < state->items.size(); ++i) {
    auto& it = state->items[i];
    with_index(i, [&] {
      if (i == state->info_error_index) { std::rethrow_exception(state->info_error); }
      const auto p   = reinterpret_cast<std::uintptr_t>(it.buf);
      const auto end = it.info.base + it.info.alloc_size;
      const bool fits =
        it.info.host_accessible() || (p >= it.info.base && p <= end && it.asked <= end - p);
      if (!fits) {  // the message is built only where the check fails (thousands fit)
        detail::check_device_range(it.info,
                                   it.buf,
                                   it.asked,
                                   std::string(op) + " of '" + it.handle->file.path() +
                                     "' at file offset " + std::to_string(it.offset));
      }
    });
  }
  if (bad) { std::rethrow_exception(bad); }
  // A request larger than task_size is cut into task_size pieces, as pread() cuts it, so that
  // one large request among small ones does not leave the other threads idle.
  const std::size_t task_size = std::max<std::size_t>(defaults::task_size(), 4096);
  state->host.reserve(state->items.size());
  state->host_index.reserve(state->items.size());
  for (std::size_t i = 0; i < state->items.size(); ++i) {
    auto& it = state->items[i];
    for (std::size_t done = 0; done < it.size; done += task_size) {
      const std::size_t n = std::min(task_size, it.size - done);
      if (it.info.host_accessible()) {
        state->host.push_back(
          {it.handle->file.fd(), it.buf + done, n, it.offset + done, &it.handle->file.path()});
        state->host_index.push_back(i);
      } else {
        state->pool_pieces.push_back({i, done, n});
      }
    }
  }
  auto& pool                = defaults::thread_pool();
  const std::size_t threads = pool.get_thread_count();
  state->group_pool_pieces(threads);
  // The host requests in slices, a few per thread: each slice one pass through a ring (deep
  // queues, a few system calls) or a run of plain calls; a few per thread rather than one so
  // that a thread that got slow requests does not hold the whole batch up.
  const std::size_t slices = threads == 1 ? 1 : threads * 4;
  state->chunk             = std::max<std::size_t>(16, (state->host.size() + slices - 1) / slices);
  const std::size_t host_jobs = (state->host.size() + state->chunk - 1) / state->chunk;
  const std::size_t jobs      = std::min(threads, std::max(host_jobs, state->pool_groups.size()));
  if (jobs == 0) { return detail::ready_future(0); }
  state->remaining_jobs = jobs;
  auto future           = state->promise.get_future();
  for (std::size_t j = 0; j < jobs; ++j) {
    try {
      pool.detach_task([state]() noexcept { state->run(); });
    } catch (...) {
      // As in parallel_io: the queued jobs take every request between them.
      if (j == 0) { throw; }
      if (state->remaining_jobs.fetch_sub(jobs - j) == jobs - j) { state->finish(); }
      break;
    }
  }
  return future;
}

std::future<std::size_t> run_batch(Direction direction, const std::vector<FileIORequest>& requests)
{
  return run_batch(direction, requests.size(), [&](std::size_t i) { return requests[i]; });
}

std::future<std::size_t> run_batch(Direction direction,
                                   FileHandle* file,
                                   const std::vector<IORequest>& requests)
{
  return run_batch(direction, requests.size(), [&](std::size_t i) {
    const auto& r = requests[i];
    return FileIORequest{file, r.buf, r.size, r.file_offset};
  });
}

}  // namespace

std::future<std::size_t> pread_batch(const std::vector<FileIORequest>& requests)
{
  return run_batch(Direction::read, requests);
}

std::future<std::size_t> pwrite_batch(const std::vector<FileIORequest>& requests)
{
  return run_batch(Direction::write, requests);
}

std::future<std::size_t> FileHandle::pread_batch(const std::vector<IORequest>& requests)
{
  return run_batch(Direction::read, this, requests);
}

std::future<std::size_t> FileHandle::pwrite_batch(const std::vector<IORequest>& requests)
{
  return run_batch(Direction::write, this, requests);
}

std::string batch_backend()
{
  const auto setting = std::get<std::string>(defaults::get("batch_backend"));
  if (setting == "thread_pool") { return "thread_pool"; }
  return detail::uring_available() ? "io_uring" : "thread_pool";
}

std::string io_uring_unavailable_reason() { return detail::uring_unavailable_reason(); }

}  // namespace kvikio
