// Batches of reads and writes (kvikio/batch_io.hpp): every request checked first, then host
// requests spread over the pool's threads, each submitting its share through its own
// io_uring (or plain calls), and device requests through the usual device path.
#include <kvikio/batch_io.hpp>

#include <algorithm>
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
#include "core/uring_io.hpp"
#include "device/pointer.hpp"

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
  std::shared_ptr<detail::OpenHandle> handle;
  detail::PointerInfo info;
  char* buf;
  std::size_t size;
  std::size_t offset;
};

/// A part of items[item] run on the pool: `size` bytes from `buf_offset` into the request.
struct Piece {
  std::size_t item;
  std::size_t buf_offset;
  std::size_t size;
};

/// Every request of the batch and its results; shared by the jobs on the pool.
struct BatchState {
  Direction direction;
  std::vector<Item> items;
  std::vector<detail::UringRequest> host;  // host requests (all of them, or none)
  std::vector<std::size_t> host_index;     // host[k] is a piece of items[host_index[k]]
  std::vector<Piece> pool_pieces;          // pieces run one by one on the pool
  std::size_t chunk{1};                    // host requests per io_uring share
  std::atomic<std::size_t> next_chunk{0};
  std::atomic<std::size_t> next_item{0};
  std::atomic<std::size_t> remaining_jobs{0};
  std::atomic<std::size_t> bytes{0};
  std::mutex error_mutex;
  std::size_t error_index{std::numeric_limits<std::size_t>::max()};
  std::exception_ptr error;
  std::promise<std::size_t> promise;

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
    const std::size_t chunks = (host.size() + chunk - 1) / chunk;
    for (std::size_t c = next_chunk++; c < chunks; c = next_chunk++) {
      const std::size_t begin = c * chunk;
      const std::size_t n     = std::min(chunk, host.size() - begin);
      std::span<detail::UringRequest> share(host.data() + begin, n);
      detail::uring_io(direction, share);
      for (std::size_t k = begin; k < begin + n; ++k) {
        bytes += host[k].done;
        if (host[k].error) { fail(host_index[k], host[k].error); }
      }
    }
    for (std::size_t i = next_item++; i < pool_pieces.size(); i = next_item++) {
      const auto& piece = pool_pieces[i];
      const auto& it    = items[piece.item];
      try {
        bytes += detail::batch_move_piece(direction,
                                          *it.handle,
                                          it.info,
                                          it.buf + piece.buf_offset,
                                          piece.size,
                                          it.offset + piece.buf_offset);
      } catch (...) {
        fail(piece.item, std::current_exception());
      }
    }
    if (remaining_jobs.fetch_sub(1) == 1) { finish(); }
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

std::future<std::size_t> run_batch(Direction direction, const std::vector<FileIORequest>& requests)
{
  const char* op   = direction == Direction::read ? "pread_batch" : "pwrite_batch";
  const bool uring = use_uring();
  auto state       = std::make_shared<BatchState>();
  state->direction = direction;
  state->items.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    with_index(i, [&] {
      if (r.file == nullptr) { throw std::invalid_argument(std::string(op) + ": null file"); }
      auto handle = detail::FileHandleAccess::state(*r.file);
      if (!handle) { throw std::invalid_argument("IO on closed file '" + r.file->path() + "'"); }
      handle->file.require(direction);
      constexpr auto max_off = static_cast<std::size_t>(std::numeric_limits<off_t>::max());
      if (r.file_offset > max_off || r.size > max_off - r.file_offset) {
        throw std::overflow_error(
          "file offset " + std::to_string(r.file_offset) + " plus size " + std::to_string(r.size) +
          " overflows the largest file offset for '" + r.file->path() + "'");
      }
      auto* buf = static_cast<char*>(r.buf);
      auto info = r.size > 0 ? detail::get_pointer_info(buf) : detail::PointerInfo{};
      if (!info.host_accessible()) {  // the message is built only where it may be needed
        detail::check_device_range(info,
                                   buf,
                                   r.size,
                                   std::string(op) + " of '" + r.file->path() +
                                     "' at file offset " + std::to_string(r.file_offset));
      }
      state->items.push_back({std::move(handle), info, buf, r.size, r.file_offset});
    });
  }
  // Reads stop at the end of the file: sizes are clamped once here, so that every path
  // (io_uring, plain calls, the device pipeline) gives the same short count.
  if (direction == Direction::read) {
    // One fstat per file, not per request: batches are mostly many requests on few files.
    std::unordered_map<const detail::OpenHandle*, std::size_t> sizes;
    for (auto& it : state->items) {
      if (it.size == 0) { continue; }
      auto known = sizes.find(it.handle.get());
      if (known == sizes.end()) {
        known = sizes.emplace(it.handle.get(), it.handle->file.nbytes()).first;
      }
      const std::size_t end = known->second;
      it.size               = it.offset >= end ? 0 : std::min(it.size, end - it.offset);
    }
  }
  // A request larger than task_size is cut into task_size pieces, as pread() cuts it, so that
  // one large request among small ones does not leave the other threads idle.
  const std::size_t task_size = std::max<std::size_t>(defaults::task_size(), 4096);
  for (std::size_t i = 0; i < state->items.size(); ++i) {
    auto& it = state->items[i];
    for (std::size_t done = 0; done < it.size; done += task_size) {
      const std::size_t n = std::min(task_size, it.size - done);
      if (uring && it.info.host_accessible()) {
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
  // The host requests in one share per thread (a few io_uring calls each).
  state->chunk = std::max<std::size_t>(1, (state->host.size() + threads - 1) / threads);
  const std::size_t host_jobs = (state->host.size() + state->chunk - 1) / state->chunk;
  const std::size_t jobs      = std::min(threads, std::max(host_jobs, state->pool_pieces.size()));
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

std::vector<FileIORequest> on_file(FileHandle* file, const std::vector<IORequest>& requests)
{
  std::vector<FileIORequest> out;
  out.reserve(requests.size());
  for (const auto& r : requests) {
    out.push_back({file, r.buf, r.size, r.file_offset});
  }
  return out;
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
  return run_batch(Direction::read, on_file(this, requests));
}

std::future<std::size_t> FileHandle::pwrite_batch(const std::vector<IORequest>& requests)
{
  return run_batch(Direction::write, on_file(this, requests));
}

std::string batch_backend()
{
  const auto setting = std::get<std::string>(defaults::get("batch_backend"));
  if (setting == "thread_pool") { return "thread_pool"; }
  return detail::uring_available() ? "io_uring" : "thread_pool";
}

std::string io_uring_unavailable_reason() { return detail::uring_unavailable_reason(); }

}  // namespace kvikio
