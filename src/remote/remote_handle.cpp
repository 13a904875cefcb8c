#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>
#include <exception>
#include <functional>
#include <stdexcept>

#include <kvikio/hdfs.hpp>
#include <kvikio/nvtx.hpp>
#include <kvikio/remote_handle.hpp>

#include "core/job_group.hpp"
#include "core/parallel_io.hpp"
#include "core/with_index.hpp"
#include "device/pointer.hpp"
#include "device/staging.hpp"
#include "remote/range_plan.hpp"
#include "remote/reactor.hpp"
#include "remote/transfer.hpp"
#include "remote/url.hpp"
#include "remote/writer.hpp"

namespace kvikio {
namespace detail {

// Reads one range into `buf`, described by `info`. This is the one place where the
// destination's memory kind matters. Memory the CPU can write (host, pinned, managed): the
// sink copies each network piece straight into place. Device memory: the pieces go to the
// device floor's stager, which packs them into a pooled pinned bounce buffer and copies each
// full half to the device while the network fills the other.
std::size_t read_range_into(RemoteEndpoint& endpoint,
                            const PointerInfo& info,
                            void* buf,
                            std::size_t size,
                            std::size_t file_offset)
{
  char* dst = static_cast<char*>(buf);
  if (info.host_accessible()) {
    Sink host_sink = [dst, pos = std::size_t{0}](const char* data, std::size_t n) mutable {
      std::memcpy(dst + pos, data, n);
      pos += n;
    };
    return fetch_range(endpoint, file_offset, size, host_sink);
  }
  DeviceStager stager(
    info.context, dst, "reading " + redact_url(endpoint.url()) + " into device memory");
  fetch_range(endpoint, file_offset, size, std::ref(stager));
  return stager.finish();
}

}  // namespace detail

namespace {

// `explicit_type`: the caller named the type, so an S3-compatible server's plain http(s) URL
// is taken as S3; inference (AUTO) only takes s3:// and AWS S3 hosts as S3.
bool url_fits(RemoteEndpointType type, const std::string& url, bool explicit_type)
{
  switch (type) {
    case RemoteEndpointType::S3:
      return S3Endpoint::is_url_valid(url) || (explicit_type && HttpEndpoint::is_url_valid(url));
    case RemoteEndpointType::S3_PUBLIC:
      // Inference takes only S3 URLs as public S3 (any http(s) URL would fit otherwise).
      return explicit_type ? S3PublicEndpoint::is_url_valid(url) : S3Endpoint::is_url_valid(url);
    case RemoteEndpointType::S3_PRESIGNED_URL:
      return S3EndpointWithPresignedUrl::is_url_valid(url);
    case RemoteEndpointType::WEBHDFS:
      return WebHdfsEndpoint::is_url_valid(url);
    case RemoteEndpointType::HTTP:
      return HttpEndpoint::is_url_valid(url);
    case RemoteEndpointType::AUTO:
      return false;
  }
  return false;
}

std::unique_ptr<RemoteEndpoint> make_endpoint(RemoteEndpointType type, const std::string& url)
{
  switch (type) {
    case RemoteEndpointType::S3:
      if (detail::is_s3_url(url)) {
        return std::make_unique<S3Endpoint>(S3Endpoint::parse_s3_url(url));
      }
      return std::make_unique<S3Endpoint>(url);
    case RemoteEndpointType::S3_PUBLIC:
      return std::make_unique<S3PublicEndpoint>(url);
    case RemoteEndpointType::S3_PRESIGNED_URL:
      return std::make_unique<S3EndpointWithPresignedUrl>(url);
    case RemoteEndpointType::WEBHDFS:
      return std::make_unique<WebHdfsEndpoint>(url);
    case RemoteEndpointType::HTTP:
      return std::make_unique<HttpEndpoint>(url);
    case RemoteEndpointType::AUTO:
      break;
  }
  throw std::invalid_argument("RemoteHandle::open: AUTO is not a concrete endpoint type");
}

std::string list_text(const std::vector<RemoteEndpointType>& types)
{
  std::string s;
  for (auto t : types) {
    if (!s.empty()) { s += ", "; }
    s += to_string(t);
  }
  return s;
}

}  // namespace

RemoteHandle RemoteHandle::open(const std::string& url,
                                RemoteEndpointType remote_endpoint_type,
                                std::optional<std::vector<RemoteEndpointType>> allow_list,
                                std::optional<std::size_t> nbytes)
{
  // Upstream's default list: S3 before S3_PUBLIC, which is S3's fallback.
  const std::vector<RemoteEndpointType> types =
    allow_list.value_or(std::vector<RemoteEndpointType>{RemoteEndpointType::S3,
                                                        RemoteEndpointType::S3_PUBLIC,
                                                        RemoteEndpointType::S3_PRESIGNED_URL,
                                                        RemoteEndpointType::WEBHDFS,
                                                        RemoteEndpointType::HTTP});
  const bool public_allowed =
    std::find(types.begin(), types.end(), RemoteEndpointType::S3_PUBLIC) != types.end();
  std::unique_ptr<RemoteEndpoint> endpoint;
  if (remote_endpoint_type == RemoteEndpointType::AUTO) {
    for (auto t : types) {
      if (!url_fits(t, url, false)) { continue; }
      if (t == RemoteEndpointType::S3 && public_allowed) {
        // As upstream: an S3 URL that cannot be opened signed (no credentials or region, or
        // the signed HEAD fails) is tried as a public object, so public buckets open without
        // credentials.
        std::exception_ptr signed_error;
        bool server_refused = false;
        try {
          auto signed_endpoint = make_endpoint(t, url);
          if (nbytes) { return RemoteHandle(std::move(signed_endpoint), *nbytes); }
          return RemoteHandle(std::move(signed_endpoint));
        } catch (const RemoteError&) {
          signed_error   = std::current_exception();
          server_refused = true;
        } catch (const std::exception&) {
          signed_error = std::current_exception();
        }
        try {
          auto public_endpoint = make_endpoint(RemoteEndpointType::S3_PUBLIC, url);
          if (nbytes) { return RemoteHandle(std::move(public_endpoint), *nbytes); }
          return RemoteHandle(std::move(public_endpoint));
        } catch (const RemoteHttpError&) {
          // Neither worked. When the server refused the signed request (a bad key or token,
          // a missing object), that answer says more than the anonymous one does.
          if (server_refused) { std::rethrow_exception(signed_error); }
          throw;
        } catch (const std::exception&) {
          // The anonymous request got no answer at all: say why signing failed (missing
          // credentials, a bad bucket name) rather than why an unasked-for attempt did.
          std::rethrow_exception(signed_error);
        }
      }
      endpoint = make_endpoint(t, url);
      break;
    }
    if (!endpoint) {
      // "Bad scheme" / "Unsupported endpoint URL": the phrases upstream's callers match.
      throw std::invalid_argument(
        "RemoteHandle::open: no allowed endpoint type (" + list_text(types) +
        ") accepts the URL '" + redact_url(url) + "' (" +
        (detail::has_url_scheme(url) ? "Unsupported endpoint URL" : "Bad scheme") + ")");
    }
  } else {
    if (allow_list && std::find(types.begin(), types.end(), remote_endpoint_type) == types.end()) {
      throw std::invalid_argument("RemoteHandle::open: endpoint type " +
                                  to_string(remote_endpoint_type) + " is not in the allowlist (" +
                                  list_text(types) + ") for '" + redact_url(url) + "'");
    }
    if (!url_fits(remote_endpoint_type, url, true)) {
      throw std::invalid_argument("RemoteHandle::open: Invalid URL '" + redact_url(url) +
                                  "': it is not a valid URL for endpoint type " +
                                  to_string(remote_endpoint_type));
    }
    endpoint = make_endpoint(remote_endpoint_type, url);
  }
  if (nbytes) { return RemoteHandle(std::move(endpoint), *nbytes); }
  return RemoteHandle(std::move(endpoint));
}

RemoteHandle::RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint, std::size_t nbytes)
  : endpoint_(std::move(endpoint)), nbytes_(nbytes)
{
  if (!endpoint_) { throw std::invalid_argument("RemoteHandle: the endpoint must not be null"); }
}

RemoteHandle::RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint)
  : endpoint_(std::move(endpoint))
{
  if (!endpoint_) { throw std::invalid_argument("RemoteHandle: the endpoint must not be null"); }
  nbytes_ = endpoint_->get_file_size();
}

RemoteHandle::RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint,
                           RemoteOpenMode mode,
                           RemoteWriteOptions options)
  : endpoint_(std::move(endpoint)), mode_(mode)
{
  if (!endpoint_) { throw std::invalid_argument("RemoteHandle: the endpoint must not be null"); }
  if (mode_ == RemoteOpenMode::READ) {
    nbytes_ = options.nbytes ? *options.nbytes : endpoint_->get_file_size();
    return;
  }
  using Kind      = detail::RemoteWriter::Kind;
  const auto type = endpoint_->remote_endpoint_type();
  const auto url  = redact_url(endpoint_->url());
  Kind kind{};
  switch (type) {
    case RemoteEndpointType::S3:
      kind = Kind::S3_MULTIPART;
      break;
    case RemoteEndpointType::S3_PRESIGNED_URL:
      kind = Kind::S3_SINGLE_PUT;
      break;
    case RemoteEndpointType::WEBHDFS:
      kind = Kind::WEBHDFS;
      break;
    default:
      throw std::invalid_argument("RemoteHandle: " + to_string(type) + " endpoint " + url +
                                  " cannot be written (S3, S3_PRESIGNED_URL and WEBHDFS can)");
  }
  if (mode_ == RemoteOpenMode::APPEND && kind != Kind::WEBHDFS) {
    throw std::invalid_argument("RemoteHandle: append mode is for WebHDFS only; " +
                                to_string(type) + " objects (" + url +
                                ") are written whole (mode WRITE)");
  }
  writer_ = std::make_shared<detail::RemoteWriter>(
    endpoint_, kind, mode_ == RemoteOpenMode::APPEND, options);
}

RemoteHandle::~RemoteHandle()
{
  // Commit or nothing: a write handle dropped without close() leaves no object behind.
  if (writer_) { writer_->abort(); }
}

std::size_t RemoteHandle::nbytes() const noexcept
{
  if (writer_) {
    try {
      return writer_->extent();
    } catch (...) {
      return 0;
    }
  }
  return nbytes_;
}

bool RemoteHandle::is_open() const noexcept { return !closed_; }

void RemoteHandle::check_readable(const char* op) const
{
  if (mode_ != RemoteOpenMode::READ || closed_) {
    auto url = redact_url(endpoint_->url());
    throw RemoteModeError(
      std::string("kvikio: ") + op + " of " + url + ": " +
        (closed_ ? "the handle is closed" : "the handle was opened for writing, not reading"),
      url,
      0);
  }
}

std::size_t RemoteHandle::write(const void* buf,
                                std::size_t size,
                                std::optional<std::size_t> file_offset)
{
  KVIKIO_NVTX_FUNC_RANGE(size);
  if (!writer_ || closed_) {
    auto url = redact_url(endpoint_->url());
    throw RemoteModeError(
      "kvikio: write to " + url + ": " +
        (closed_ ? "the handle is closed" : "the handle was opened for reading, not writing"),
      url,
      0);
  }
  if (file_offset) {
    writer_->pwrite(buf, size, *file_offset);
    return size;
  }
  const std::size_t at = writer_->reserve_sequential(size);
  try {
    writer_->pwrite(buf, size, at);
  } catch (...) {
    writer_->release_sequential(at, size);  // a refused write does not move the position
    throw;
  }
  return size;
}

std::future<std::size_t> RemoteHandle::pwrite(const void* buf,
                                              std::size_t size,
                                              std::size_t file_offset)
{
  KVIKIO_NVTX_FUNC_RANGE(size);
  return detail::ready_future(write(buf, size, file_offset));
}

void RemoteHandle::close()
{
  if (closed_) { return; }
  closed_ = true;
  if (writer_) { writer_->close(); }
}

void RemoteHandle::abort() noexcept
{
  closed_ = true;
  if (writer_) { writer_->abort(); }
}

RemoteEndpointType RemoteHandle::remote_endpoint_type() const noexcept
{
  return endpoint_->remote_endpoint_type();
}

void RemoteHandle::check_range(std::size_t size, std::size_t file_offset) const
{
  if (size > 0 && (file_offset > nbytes_ || size > nbytes_ - file_offset)) {
    // "cannot read O+N bytes into a S bytes file" is what upstream's callers match.
    throw EndOfFileError("kvikio: cannot read " + std::to_string(file_offset) + "+" +
                         std::to_string(size) + " bytes into a " + std::to_string(nbytes_) +
                         " bytes file: the read of " + std::to_string(size) + " bytes at offset " +
                         std::to_string(file_offset) + " from " + redact_url(endpoint_->url()) +
                         " ends past the end of the object (" + std::to_string(nbytes_) +
                         " bytes); no request was sent");
  }
}

std::size_t RemoteHandle::read(void* buf, std::size_t size, std::size_t file_offset)
{
  KVIKIO_NVTX_FUNC_RANGE(size);
  check_readable("read");
  check_range(size, file_offset);
  if (size == 0) { return 0; }
  if (buf == nullptr) {
    throw std::invalid_argument("RemoteHandle::read: null buffer for " + std::to_string(size) +
                                " bytes from " + redact_url(endpoint_->url()));
  }
  // One range request per task_size piece, in order on this thread: http_timeout bounds a
  // request, so an unbounded request would turn a large, healthy read into a timeout.
  const auto info = detail::check_buffer(
    buf, size, "read of " + std::to_string(size) + " bytes from " + redact_url(endpoint_->url()));
  std::size_t done = 0;
  const detail::TaskPieces pieces(size, file_offset, defaults::task_size());
  for (std::size_t i = 0; i < pieces.count(); ++i) {
    const auto t = pieces[i];
    done += detail::read_range_into(
      *endpoint_, info, static_cast<char*>(buf) + t.buf_offset, t.size, t.file_offset);
  }
  return done;
}

std::future<std::size_t> RemoteHandle::pread(void* buf,
                                             std::size_t size,
                                             std::size_t file_offset,
                                             std::size_t task_size,
                                             ThreadPool* thread_pool)
{
  KVIKIO_NVTX_FUNC_RANGE(size);
  check_readable("pread");
  check_range(size, file_offset);
  if (size == 0) { return detail::ready_future(0); }
  if (buf == nullptr) {
    throw std::invalid_argument("RemoteHandle::pread: null buffer for " + std::to_string(size) +
                                " bytes from " + redact_url(endpoint_->url()));
  }
  if (task_size == 0) {
    throw std::invalid_argument("RemoteHandle::pread: task_size must be > 0 (reading " +
                                redact_url(endpoint_->url()) + ")");
  }
  const auto info = detail::check_buffer(
    buf, size, "read of " + std::to_string(size) + " bytes from " + redact_url(endpoint_->url()));
  if (info.host_accessible() && defaults::remote_io_backend() == RemoteIOBackend::MULTI_POLL) {
    return read_ranges({IORequest{buf, size, file_offset}}, task_size, thread_pool);
  }
  // Tasks hold the endpoint, so a handle moved or destroyed early cannot pull it from them.
  std::shared_ptr<RemoteEndpoint> endpoint = endpoint_;
  char* base                               = static_cast<char*>(buf);
  auto op = [endpoint, info, base](const detail::TaskRange& t) -> std::size_t {
    return detail::read_range_into(*endpoint, info, base + t.buf_offset, t.size, t.file_offset);
  };
  return detail::parallel_io(op, size, file_offset, task_size, thread_pool);
}

namespace {

using Target  = detail::RangeTarget;
using Group   = detail::RangeGroup;
using Scatter = detail::RangeScatter;

/// A batch under way: its range requests and their results, shared by the pool tasks and the
/// reactors' completion callbacks.
struct RangesState {
  std::shared_ptr<RemoteEndpoint> endpoint;
  std::vector<Group> groups;
  std::vector<std::size_t> on_pool;  // the groups the pool runs
  std::atomic<std::size_t> next{0};  // the next of on_pool to take
  // One pending completion per group, plus the caller's share while it queues them; the
  // bytes are those of every request (a range read moves all of its bytes or fails).
  detail::JobGroup group{1, [this] { endpoint.reset(); }};

  void done(const Group& g, std::exception_ptr e) noexcept
  {
    if (e) { group.record(g.first_index, std::move(e)); }
    group.done();
  }

  void run(const Group& g) noexcept
  {
    try {
      if (g.device) {
        const auto& t = g.targets.front();
        detail::read_range_into(*endpoint, g.info, t.dst, t.size, t.file_offset);
      } else if (g.targets.size() == 1) {
        char* dst = g.targets.front().dst;
        detail::fetch_range(
          *endpoint, g.file_offset, g.size, [dst](const char* d, std::size_t n) mutable {
            std::memcpy(dst, d, n);
            dst += n;
          });
      } else {
        detail::fetch_range(*endpoint, g.file_offset, g.size, Scatter{&g});
      }
    } catch (...) {
      done(g, std::current_exception());
      return;
    }
    done(g, nullptr);
  }

  void run_pool_share() noexcept
  {
    for (std::size_t k = next++; k < on_pool.size(); k = next++) {
      run(groups[on_pool[k]]);
    }
  }
};

}  // namespace

std::future<std::size_t> RemoteHandle::pread_batch(const std::vector<IORequest>& requests)
{
  check_readable("pread_batch");
  return read_ranges(requests, defaults::task_size(), nullptr);
}

std::future<std::size_t> RemoteHandle::read_ranges(const std::vector<IORequest>& requests,
                                                   std::size_t task_size,
                                                   ThreadPool* thread_pool)
{
  const std::string url = redact_url(endpoint_->url());
  auto state            = std::make_shared<RangesState>();
  state->endpoint       = endpoint_;
  // Every request checked, and cut into task_size pieces, before anything is sent.
  detail::RangePlan plan(task_size, remote_coalesce_gap);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    if (r.size == 0) { continue; }
    detail::PointerInfo info;
    detail::with_index(i, [&] {
      if (r.buf == nullptr) {
        throw std::invalid_argument("RemoteHandle::pread_batch: null buffer for " +
                                    std::to_string(r.size) + " bytes from " + url);
      }
      check_range(r.size, r.file_offset);
      info = detail::check_buffer(
        r.buf, r.size, "read of " + std::to_string(r.size) + " bytes from " + url);
    });
    plan.add(i, static_cast<char*>(r.buf), r.size, r.file_offset, info);
  }
  state->groups           = plan.finish();
  const std::size_t total = plan.bytes();
  if (state->groups.empty()) { return detail::ready_future(0); }

  const bool multi = defaults::remote_io_backend() == RemoteIOBackend::MULTI_POLL;
  std::vector<std::size_t> on_reactors;
  for (std::size_t k = 0; k < state->groups.size(); ++k) {
    if (multi && !state->groups[k].device) {
      on_reactors.push_back(k);
    } else {
      state->on_pool.push_back(k);
    }
  }
  state->group.add_pending(state->groups.size());
  state->group.add_bytes(total);
  auto future = state->group.future();
  if (!state->on_pool.empty()) {
    auto& pool             = thread_pool != nullptr ? *thread_pool : defaults::thread_pool();
    const std::size_t jobs = std::min<std::size_t>(
      std::max<std::size_t>(1, pool.get_thread_count()), state->on_pool.size());
    // The jobs queued take every group between them; with none queued, nothing has started
    // and the error goes to the caller.
    detail::JobGroup::queue_helpers(pool, jobs, [state]() noexcept { state->run_pool_share(); });
  }
  if (!on_reactors.empty()) {
    std::vector<detail::RangeJob> jobs;
    jobs.reserve(on_reactors.size());
    for (auto k : on_reactors) {
      const Group* g = &state->groups[k];
      detail::Sink sink;
      if (g->targets.size() == 1) {
        sink = [dst = g->targets.front().dst](const char* d, std::size_t n) mutable {
          std::memcpy(dst, d, n);
          dst += n;
        };
      } else {
        sink = Scatter{g};
      }
      jobs.push_back(detail::RangeJob{
        endpoint_, g->file_offset, g->size, std::move(sink), [state, g](std::exception_ptr e) {
          state->done(*g, std::move(e));
        }});
    }
    detail::submit_to_reactors(std::move(jobs));  // completes what it cannot hand over
  }
  state->group.done();  // the caller's share
  return future;
}

}  // namespace kvikio
