// Batches of reads and writes (kvikio/batch_io.hpp): every request checked first, then host
// requests spread over the pool's threads, each submitting its share through its own
// io_uring (or plain calls), and device requests through the usual device path.
//
// A large batch is handed to the pool once (issue 14: a serial set-up on the calling thread,
// then a second hand-off for the IO, each cost the batch a share of its IOPS against plain
// threads calling pread). Its jobs check blocks of requests beside the caller, wait for the
// last block, then go straight on to the IO; the caller waits for the checks too, so that a
// bad request still raises from the call itself, before any IO. The IO runs in slices taken
// off a shared cursor, shrinking as the batch drains, so that the threads finish together
// instead of one of them holding a long last slice. Reads of many requests per file go
// through each thread's own descriptor of the file (detail::OpenFile::read_fd_for_thread).
#include <kvikio/batch_io.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>

#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>

#include "api/batch_plan.hpp"
#include "api/open_handle.hpp"
#include "api/request.hpp"
#include "core/open_file.hpp"
#include "core/job_group.hpp"
#include "core/posix_io.hpp"
#include "core/uring_io.hpp"
#include "core/with_index.hpp"
#include "device/device_batch.hpp"
#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"

namespace kvikio {
namespace {

using detail::Direction;

using Item      = detail::BatchItem;
using Piece     = detail::BatchPiece;
using PoolGroup = detail::PoolGroup;
using Policy    = detail::BatchPolicy;

/// A file of the batch, looked up and checked once.
struct FileEntry {
  detail::OpenHandle* handle;
  std::size_t size;  // for reads: where they stop
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

/// Where a batch stands: its requests are being checked, or the checks ended.
enum class Phase : int { checking, ready, failed };

/// Every request of the batch and its results; shared by the calling thread and the jobs on
/// the pool.
///
/// The host requests are `host` (entry i for request i; of size 0 where request i is empty,
/// in device memory or larger than task_size) followed by `extra` (the task_size pieces of
/// the large ones): one run of slices over both, no slice straddling the two.
struct BatchState : std::enable_shared_from_this<BatchState> {
  static constexpr std::size_t block = Policy::check_block;

  Direction direction{};
  const char* op{""};
  detail::BatchTransfer transfer;  // thread_fds decided once the checks know the files
  std::size_t task_size{0};
  std::size_t threads{1};
  // The requests, in one of two forms: the caller's vectors, read in the checks only.
  const FileIORequest* requests{nullptr};
  FileHandle* file{nullptr};
  const IORequest* file_requests{nullptr};
  std::size_t count{0};

  // --- the checks ---
  // Pointer attributes: without a CUDA driver every buffer is host memory. With one, a buffer
  // inside the host mapping or the device allocation of the request before reuses that
  // answer. The driver serialises pointer queries on a lock of its own (~0.7 us each on an
  // H200), so a buffer lying inside one plain read-write mapping of the process is taken as
  // host memory without a query (detail::HostMappings says why device memory is never there);
  // only the rest is looked up. The mapping comes from the kernel one buffer at a time where
  // it can answer so (detail::MappingQuery), else a large batch reads the whole list once.
  // Pinned or managed memory taken so is plain process memory too, and every host-accessible
  // kind goes the same host path.
  bool driver{false};
  const detail::MappingQuery* query{nullptr};  // null, or one that is available
  detail::HostMappings mappings;  // used without a query; empty: every buffer is looked up
  std::size_t blocks{0};
  std::vector<std::size_t> block_host;  // the host entries with bytes, per block
  std::atomic<std::size_t> next_block{0};
  std::atomic<std::size_t> finished_blocks{0};
  std::atomic<Phase> phase{Phase::checking};

  std::mutex files_mutex;
  std::unordered_map<const FileHandle*, FileEntry> files;
  std::vector<std::shared_ptr<detail::OpenHandle>> handles;  // each file once

  // --- the IO ---
  std::unique_ptr<detail::UringRequest[]> host;      // filled by the checks, in parallel
  std::unique_ptr<detail::OpenHandle*[]> host_file;  // the file of host[i]
  std::vector<detail::UringRequest> extra;
  std::vector<const Item*> extra_item;  // extra[k] is a piece of *extra_item[k]
  std::size_t host_requests{0};         // entries of host and extra with bytes to move
  // The requests that are not one host entry, by check block (in request order): the
  // blocks' own vectors, kept rather than copied into one (a batch of device buffers has an
  // item per request).
  std::vector<std::vector<Item>> items;
  std::vector<Piece> pool_pieces;      // device pieces, run in pool_groups on the pool
  std::vector<PoolGroup> pool_groups;  // what the jobs take, one by one
  std::size_t min_slice{1};
  std::size_t jobs{0};                    // queued on the pool so far
  std::atomic<std::size_t> next_host{0};  // the slice cursor over host, then extra
  std::atomic<std::size_t> next_item{0};
  // The checks' errors and the IO's (the IO runs only after checks that passed), the bytes,
  // and the jobs. Its pending share of 1 is the checks', ended with them (end_checks). The
  // files are let go before the future is ready (JobGroup says why).
  detail::JobGroup io{1, [this] { handles.clear(); }};

  [[nodiscard]] FileIORequest request(std::size_t i) const
  {
    if (requests != nullptr) { return requests[i]; }
    const auto& r = file_requests[i];
    return FileIORequest{file, r.buf, r.size, r.file_offset};
  }

  /// The entry of `f`: on its first use in the batch it is checked (open, and opened for
  /// `direction`) and measured, and kept alive for the batch.
  FileEntry file_entry(const FileHandle& f)
  {
    std::lock_guard lock(files_mutex);
    if (auto known = files.find(&f); known != files.end()) { return known->second; }
    const auto& shared = detail::open_state(f);
    if (!shared) { detail::throw_closed(f.path()); }
    shared->file.require(direction);
    // Reads stop at the end of the file: sizes are clamped once, in the checks, so that every
    // path (io_uring, plain calls, the device pipeline) gives the same short count.
    const FileEntry entry{shared.get(), direction == Direction::read ? shared->file.nbytes() : 0};
    handles.push_back(shared);
    files.emplace(&f, entry);
    return entry;
  }

  /// Sets up the checks and queues the jobs that help with them, for a large batch. Each job
  /// goes on from the checks to the IO, so the pool is handed the batch once (issue 14: a
  /// second hand-off for the IO cost a large batch a tenth of its time on the H200).
  void start()
  {
    driver = detail::CudaAPI::instance().available();
    query  = driver ? detail::this_process_mapping_query() : nullptr;
    if (driver && query == nullptr && count >= Policy::mappings_from) {
      mappings = detail::HostMappings::read_self();
    }
    blocks = (count + block - 1) / block;
    items.resize(blocks);
    block_host.assign(blocks, 0);
    // Filled by the checks, every entry (no value-initialisation here: that alone cost a
    // serial pass over a large batch).
    host      = std::make_unique_for_overwrite<detail::UringRequest[]>(count);
    host_file = std::make_unique_for_overwrite<detail::OpenHandle*[]>(count);
    // One job fewer than there are cores: the caller checks too, and a thread of the checks
    // that waited for a core would hold the others at the end of the checks for a scheduler
    // slice (milliseconds). The checks queue the rest once they end (prepare_io).
    const std::size_t cores = std::max(1U, std::thread::hardware_concurrency());
    if (count >= Policy::parallel_checks_from) {
      launch(std::min(threads, std::max<std::size_t>(1, cores - 1)));
    }
  }

  /// Queues `n` more jobs (all or none), while the checks' share is pending.
  void launch(std::size_t n)
  {
    // Counted before they are queued: a queued job may end the checks, and read the count,
    // before this call returns.
    jobs += n;
    try {
      io.queue_copies(defaults::thread_pool(), n, [self = shared_from_this()] { self->job(); });
    } catch (...) {
      jobs -= n;
      throw;
    }
  }

  /// What a job on the pool does: checks, then IO.
  void job() noexcept
  {
    check_blocks();
    if (await_checks()) { run_io(); }
    io.done();
  }

  /// The checks of the caller and of the jobs: every request checked and sorted into the host
  /// entries or the items, in blocks taken until none is left. A block stops at its first
  /// bad request; the lowest-numbered one of all is reported. Whoever finishes the last block
  /// ends the checks.
  void check_blocks() noexcept
  {
    for (std::size_t b = next_block++; b < blocks; b = next_block++) {
      Cache cache;
      for (std::size_t i = b * block; i < std::min(count, (b + 1) * block); ++i) {
        try {
          detail::with_index(i, [&] { check(b, i, cache); });
        } catch (...) {
          io.record(i, std::current_exception());
          break;
        }
      }
      block_host[b] = cache.host_entries;
      if (finished_blocks.fetch_add(1, std::memory_order_acq_rel) + 1 == blocks) { end_checks(); }
    }
  }

  /// True once every request passed its checks, false if one failed. Spins a little before
  /// it sleeps: the checks of a large batch take tens of microseconds, about what waking a
  /// sleeping thread does.
  bool await_checks() noexcept
  {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    Phase now           = phase.load(std::memory_order_acquire);
    while (now == Phase::checking && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();  // a thread of the checks that lost its core gets it back
      now = phase.load(std::memory_order_acquire);
    }
    for (; now == Phase::checking; now = phase.load(std::memory_order_acquire)) {
      phase.wait(Phase::checking, std::memory_order_acquire);
    }
    return now == Phase::ready;
  }

  /// After the last block: lays the IO out and queues the jobs it needs beyond those already
  /// queued, then lets every waiter go on.
  void end_checks() noexcept
  {
    requests      = nullptr;  // the caller's vectors are not read after the checks
    file_requests = nullptr;
    // Every block's records happened before its finished_blocks increment.
    Phase outcome = io.first_error() ? Phase::failed : Phase::ready;
    if (outcome == Phase::ready) {
      try {
        prepare_io();
      } catch (...) {
        io.record(count, std::current_exception());
        outcome = Phase::failed;
      }
    }
    phase.store(outcome, std::memory_order_release);
    phase.notify_all();
    // After failed checks nobody holds the future: the caller raises the error.
    io.done();  // the checks' share: with no job queued, the batch is done (0 bytes)
  }

  void prepare_io()
  {
    std::size_t item_count = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
      host_requests += block_host[b];
      item_count += items[b].size();
    }
    pool_pieces.reserve(item_count);
    for (const auto& in_block : items) {
      for (const auto& it : in_block) {
        for (std::size_t done = 0; done < it.size; done += task_size) {
          const std::size_t n = std::min(task_size, it.size - done);
          if (it.info.host_accessible()) {
            const auto& f = it.handle->file;
            extra.push_back({f.fd(), it.buf + done, n, it.offset + done, &f.path(), 0, 0});
            extra_item.push_back(&it);
            ++host_requests;
          } else {
            pool_pieces.push_back({&it, done, n});
          }
        }
      }
    }
    if (!pool_pieces.empty()) {
      // Small pieces of files without cuFile (the POSIX path detail::route takes) are staged
      // in groups: one synchronisation per group instead of one copy call per piece.
      std::vector<detail::PieceShape> shapes;
      shapes.reserve(pool_pieces.size());
      for (const auto& p : pool_pieces) {
        shapes.push_back({p.size,
                          p.item->info.context,
                          !p.item->handle->cufile && p.size <= detail::device_batch_piece_max});
      }
      pool_groups = detail::plan_pool_groups(shapes, threads, defaults::bounce_buffer_size());
    }
    transfer.thread_fds = detail::use_thread_fds(
      direction, transfer.direct_io, threads, host_requests + pool_pieces.size(), handles.size());
    min_slice = Policy::min_slice(transfer.uring);
    const std::size_t needed =
      detail::jobs_needed(threads, host_requests, min_slice, pool_groups.size());
    if (needed > jobs) { launch(needed - jobs); }
  }

  /// What the requests before the one being checked found out, within its block.
  struct Cache {
    const FileHandle* file{nullptr};
    FileEntry entry{};
    std::pair<std::uintptr_t, std::uintptr_t> host_range{0, 0};  // {0, 0}: none yet
    detail::PointerInfo device;                                  // kind HOST: none yet
    // The block's host entries with bytes, stored into block_host once at the end of the
    // block: the counters of neighbouring blocks share cache lines.
    std::size_t host_entries{0};
  };

  /// The plain read-write mapping holding the buffer; {0, 0} when none is known.
  [[nodiscard]] std::pair<std::uintptr_t, std::uintptr_t> host_mapping(const void* buf,
                                                                       std::size_t size) const
  {
    if (query != nullptr) { return query->find(buf, size); }
    const auto* range = mappings.find(buf, size);
    return range != nullptr ? *range : std::pair<std::uintptr_t, std::uintptr_t>{0, 0};
  }

  /// Checks request i and files it under block b's host entries or items.
  void check(std::size_t b, std::size_t i, Cache& cache)
  {
    const FileIORequest r = request(i);
    if (r.file == nullptr) { throw std::invalid_argument(std::string(op) + ": null file"); }
    if (r.file != cache.file) {
      cache.entry = file_entry(*r.file);
      cache.file  = r.file;
    }
    const auto& f = cache.entry.handle->file;
    detail::check_file_range(r.file->path(), r.size, r.file_offset);
    std::size_t size = r.size;
    if (direction == Direction::read && size > 0) {
      const std::size_t end = cache.entry.size;
      size                  = r.file_offset >= end ? 0 : std::min(size, end - r.file_offset);
    }
    auto* buf    = static_cast<char*>(r.buf);
    host[i]      = {f.fd(), buf, 0, r.file_offset, &f.path(), 0, 0};
    host_file[i] = cache.entry.handle;
    if (r.size == 0) { return; }
    detail::PointerInfo info;  // host memory unless the driver says otherwise
    const auto p           = reinterpret_cast<std::uintptr_t>(buf);
    const auto& host_range = cache.host_range;
    const auto& dev        = cache.device;
    if (!driver) {
      // host memory
    } else if (p >= host_range.first && p < host_range.second && r.size <= host_range.second - p) {
      // inside the host mapping of a request before
    } else if (dev.kind == detail::MemoryKind::DEVICE && p >= dev.base &&
               p - dev.base < dev.alloc_size) {
      info = dev;  // the same live allocation: the same attributes
    } else if (const auto range = host_mapping(buf, r.size); range.second != 0) {
      cache.host_range = range;
    } else {
      info = detail::get_pointer_info(buf);
      if (!info.host_accessible()) { cache.device = info; }
    }
    if (!info.host_accessible()) {
      const auto end = info.base + info.alloc_size;
      if (p < info.base || p > end || r.size > end - p) {
        // The message is built only where the check fails (thousands fit).
        detail::check_device_range(
          info, buf, r.size, detail::describe(op, f.path(), r.file_offset));
      }
    }
    if (size == 0) { return; }
    if (info.host_accessible() && size <= task_size) {
      host[i].size = size;
      ++cache.host_entries;
      return;
    }
    auto& in_block = items[b];
    if (in_block.empty()) { in_block.reserve(std::min(block, count - i)); }
    in_block.push_back({i, cache.entry.handle, info, buf, size, r.file_offset});
  }

  /// The next slice of host entries [begin, begin + n): about 1/(2 x threads) of what is
  /// left, at least min_slice; false when none is left.
  bool take_slice(std::size_t& begin, std::size_t& n) noexcept
  {
    const std::size_t total = count + extra.size();
    std::size_t pos         = next_host.load(std::memory_order_relaxed);
    for (;;) {
      const std::size_t want = detail::slice_length(pos, total, count, min_slice, threads);
      if (want == 0) { return false; }
      if (next_host.compare_exchange_weak(pos, pos + want, std::memory_order_relaxed)) {
        begin = pos;
        n     = want;
        return true;
      }
    }
  }

  /// Moves the host entries [begin, begin + n); the bytes moved.
  std::size_t run_slice(std::size_t begin, std::size_t n) noexcept
  {
    const bool in_extra         = begin >= count;
    const std::size_t first     = in_extra ? begin - count : begin;
    detail::UringRequest* share = in_extra ? extra.data() + first : host.get() + first;
    auto index_of = [&](std::size_t k) { return in_extra ? extra_item[k]->index : k; };
    auto file_of  = [&](std::size_t k) -> const detail::OpenFile& {
      return in_extra ? extra_item[k]->handle->file : host_file[k]->file;
    };
    if (transfer.thread_fds) {
      const detail::OpenFile* last = nullptr;
      int fd                       = -1;
      for (std::size_t k = 0; k < n; ++k) {
        if (const auto* f = &file_of(first + k); f != last) {
          last = f;
          fd   = f->read_fd_for_thread();
        }
        share[k].fd = fd;
      }
    }
    if (transfer.uring) {
      detail::uring_io(direction, std::span<detail::UringRequest>(share, n));
    } else {
      for (std::size_t k = 0; k < n; ++k) {
        auto& r = share[k];
        if (r.size == 0) { continue; }
        try {
          r.done = detail::posix_host_io(direction,
                                         file_of(first + k),
                                         r.buf,
                                         r.size,
                                         r.offset,
                                         transfer.direct_io,
                                         transfer.thread_fds);
        } catch (...) {
          io.record(index_of(first + k), std::current_exception());
        }
      }
    }
    std::size_t moved = 0;
    for (std::size_t k = 0; k < n; ++k) {
      moved += share[k].done;
      if (share[k].error != 0) {
        io.record(index_of(first + k), request_error(direction, share[k]));
      }
    }
    return moved;
  }

  /// This job's share of the IO: host slices while any are left, then pool groups.
  void run_io() noexcept
  {
    std::size_t moved = 0;
    std::size_t begin = 0;
    std::size_t n     = 0;
    while (host_requests > 0 && take_slice(begin, n)) {
      moved += run_slice(begin, n);
    }
    std::vector<detail::DeviceBatchPiece> staged;
    const detail::DeviceBatchFail report = [this](std::size_t i, std::exception_ptr e) {
      io.record(i, std::move(e));
    };
    for (std::size_t g = next_item++; g < pool_groups.size(); g = next_item++) {
      const auto& group = pool_groups[g];
      if (group.staged) {
        staged.clear();
        for (std::size_t k = group.begin; k < group.end; ++k) {
          const auto& piece = pool_pieces[k];
          const auto& it    = *piece.item;
          staged.push_back({&it.handle->file,
                            it.info.context,
                            it.info.base,
                            it.buf + piece.buf_offset,
                            piece.size,
                            it.offset + piece.buf_offset,
                            it.index});
        }
        moved += detail::device_batch_io(direction, staged, transfer, report);
        continue;
      }
      const auto& piece = pool_pieces[group.begin];
      const auto& it    = *piece.item;
      try {
        moved += detail::route(direction,
                               *it.handle,
                               it.info,
                               it.buf + piece.buf_offset,
                               piece.size,
                               it.offset + piece.buf_offset,
                               {.sync_default_stream = true});
      } catch (...) {
        io.record(it.index, std::current_exception());
      }
    }
    io.add_bytes(moved);
  }
};

/// Checks every request (the caller's vectors are read only then), on the calling thread and,
/// for a large batch, on the pool's threads, which go on to the IO; the future gives the
/// bytes moved or the lowest-numbered request's error. A bad request raises from the call
/// itself, before any IO.
std::future<std::size_t> run_batch(std::shared_ptr<BatchState> state)
{
  auto& st              = *state;
  st.op                 = st.direction == Direction::read ? "pread_batch" : "pwrite_batch";
  st.transfer.uring     = use_uring();
  st.transfer.direct_io = st.direction == Direction::read ? defaults::auto_direct_io_read()
                                                          : defaults::auto_direct_io_write();
  // A request larger than task_size is cut into task_size pieces, as pread() cuts it, so that
  // one large request among small ones does not leave the other threads idle.
  st.task_size = std::max<std::size_t>(defaults::task_size(), 4096);
  st.threads   = std::max<std::size_t>(1, defaults::thread_pool().get_thread_count());
  if (st.count == 0) { return detail::ready_future(0); }
  auto future = st.io.future();
  st.start();
  st.check_blocks();
  if (!st.await_checks()) { std::rethrow_exception(st.io.first_error()); }
  return future;
}

std::future<std::size_t> run_batch(Direction direction, const std::vector<FileIORequest>& requests)
{
  auto state       = std::make_shared<BatchState>();
  state->direction = direction;
  state->requests  = requests.data();
  state->count     = requests.size();
  return run_batch(std::move(state));
}

std::future<std::size_t> run_batch(Direction direction,
                                   FileHandle* file,
                                   const std::vector<IORequest>& requests)
{
  auto state           = std::make_shared<BatchState>();
  state->direction     = direction;
  state->file          = file;
  state->file_requests = requests.data();
  state->count         = requests.size();
  return run_batch(std::move(state));
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
