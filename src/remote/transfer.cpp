#include "remote/transfer.hpp"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/logger.hpp"
#include "remote/curl_handle.hpp"
#include "remote/response_parse.hpp"
#include "remote/url.hpp"

namespace kvikio {

// ---------------------------------------------------------------------------------------------
// CurlHandle and the per-thread handle cache
// ---------------------------------------------------------------------------------------------
namespace {

std::once_flag curl_global_once;

// Each thread keeps one easy handle: reusing it keeps its connection cache, so the many range
// requests a pool thread makes to one server share a TCP (and TLS) connection.
struct ThreadCurl {
  CURL* handle{nullptr};
  bool in_use{false};
  ThreadCurl()                             = default;
  ThreadCurl(const ThreadCurl&)            = delete;
  ThreadCurl& operator=(const ThreadCurl&) = delete;
  ~ThreadCurl()
  {
    if (handle != nullptr) { curl_easy_cleanup(handle); }
  }
};
thread_local ThreadCurl thread_curl;

// In a forked child the cached handle's connections are sockets shared with the parent: a
// request (or a TLS close_notify from curl_easy_cleanup) on them would interleave with the
// parent's traffic. Forget the forking thread's handle without cleaning it up; the other
// threads' caches died with their threads.
void forget_thread_curl_after_fork() noexcept
{
  // Kept reachable (never cleaned up) so that a leak checker does not report it in children.
  [[maybe_unused]] static CURL* volatile abandoned = nullptr;
  if (thread_curl.handle != nullptr) { abandoned = thread_curl.handle; }
  thread_curl.handle = nullptr;
  thread_curl.in_use = false;
}

}  // namespace

// curl_global_init is not thread safe on every libcurl build; do it once, explicitly.
void curl_init_once()
{
  std::call_once(curl_global_once, [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ::pthread_atfork(nullptr, nullptr, &forget_thread_curl_after_fork);
  });
}

CurlHandle::CurlHandle()
{
  curl_init_once();
  if (!thread_curl.in_use) {
    if (thread_curl.handle == nullptr) { thread_curl.handle = curl_easy_init(); }
    handle_ = thread_curl.handle;
    if (handle_ != nullptr) {
      curl_easy_reset(handle_);
      thread_curl.in_use = true;
    }
  } else {
    handle_ = curl_easy_init();  // a nested request on this thread: a private handle
  }
  if (handle_ == nullptr) { throw Error("kvikio: curl_easy_init() failed"); }
}

CurlHandle::CurlHandle(PrivateCurl)
{
  curl_init_once();
  handle_ = curl_easy_init();
  if (handle_ == nullptr) { throw Error("kvikio: curl_easy_init() failed"); }
}

CurlHandle::~CurlHandle()
{
  if (handle_ == thread_curl.handle && failed_) {
    // Not reused after a failure: libcurl 7.88 keeps the receive buffer of a transfer ended
    // by a refused redirect, and then rejects CURLOPT_BUFFERSIZE on the handle. The next
    // request makes a new one (a failed transfer's connection is rarely reusable anyway).
    curl_easy_cleanup(handle_);
    thread_curl.handle = nullptr;
    thread_curl.in_use = false;
    if (headers_ != nullptr) { curl_slist_free_all(headers_); }
  } else if (handle_ == thread_curl.handle) {
    // The handle outlives this request in the thread cache: reset it now, so that it keeps no
    // pointer into the finished request (its stack error buffer, its header and body state,
    // the header list freed below) that curl_easy_cleanup at thread exit could write through.
    // The connection cache survives a reset.
    curl_easy_reset(handle_);
    thread_curl.in_use = false;
    if (headers_ != nullptr) { curl_slist_free_all(headers_); }
  } else {
    curl_easy_cleanup(handle_);
    if (headers_ != nullptr) { curl_slist_free_all(headers_); }
  }
}

CURLcode CurlHandle::perform() noexcept
{
  auto rc = curl_easy_perform(handle_);
  failed_ = failed_ || rc != CURLE_OK;
  return rc;
}

void CurlHandle::append_header(const std::string& header)
{
  auto* list = curl_slist_append(headers_, header.c_str());
  if (list == nullptr) { throw Error("kvikio: curl_slist_append() failed"); }
  headers_ = list;
  setopt(CURLOPT_HTTPHEADER, headers_);
}

void CurlHandle::throw_setopt_error(CURLoption option, CURLcode rc)
{
  throw Error("kvikio: curl_easy_setopt(" + std::to_string(static_cast<int>(option)) +
              ") failed: " + curl_easy_strerror(rc));
}

}  // namespace kvikio

namespace kvikio::detail {
namespace {

// libcurl's receive buffer: larger than its 16 KiB default, so that a fast server fills
// fewer, larger write callbacks (fewer copies' overhead per byte).
constexpr long receive_buffer_size = 512L * 1024;

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user)
{
  auto len = size * n;
  parse_header_line(std::string_view(data, len), *static_cast<HeaderState*>(user));
  return len;
}

struct Attempt {
  CURLcode rc{CURLE_OK};
  long status{0};
  std::string curl_error;
  std::string error_code;
  bool ok{false};          // a complete, successful response
  bool body_error{false};  // a 2xx status whose body is an S3 <Error> document (error_code)
};

bool is_retryable_transport(CURLcode rc)
{
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    // A reused keep-alive connection that the server had closed: libcurl's own re-send on a
    // fresh connection could not rewind the body (kept here for bodies that cannot seek).
    case CURLE_SEND_FAIL_REWIND:
      return true;
    default:
      return false;
  }
}

// The codes of S3's 200-with-<Error> answers that AWS documents as retryable.
bool is_retryable_body_error(const std::string& code)
{
  return code == "InternalError" || code == "SlowDown" || code == "ServiceUnavailable" ||
         code == "RequestTimeout";
}

bool is_retryable_status(long status)
{
  auto codes = defaults::http_status_codes();
  return std::find(codes.begin(), codes.end(), static_cast<int>(status)) != codes.end();
}

std::string describe_failure(const std::string& what,
                             const std::string& url,
                             const Attempt& a,
                             std::size_t attempts)
{
  std::ostringstream s;
  s << "kvikio: " << what << " " << url << " failed: ";
  if (a.rc == CURLE_OK || a.status != 0) {
    s << "HTTP status " << a.status;
    if (!a.error_code.empty()) {
      s << " (" << a.error_code << (a.body_error ? " in the body" : "") << ")";
    }
  } else {
    s << "no HTTP response (HTTP status 0)";
  }
  if (a.rc != CURLE_OK) {
    s << "; " << (a.curl_error.empty() ? curl_easy_strerror(a.rc) : a.curl_error) << " (curl error "
      << static_cast<int>(a.rc) << ")";
  }
  s << " after " << attempts << " attempt" << (attempts == 1 ? "" : "s");
  return s.str();
}

// Counts the attempts of one logical request and decides after each failed one: the delay
// before the next attempt, or the error that fits the failure (thrown). The blocking loop
// below and the multi reactor (remote/reactor.cpp) both use it, so retries and errors are the
// same on either backend.
class Retries {
 public:
  explicit Retries(const RemoteEndpoint& endpoint)
    : max_attempts_(std::max<std::size_t>(1, defaults::http_max_attempts())),
      url_(redact_url(endpoint.url()))
  {
  }
  std::chrono::milliseconds after_failure(const Attempt& a, const std::string& what)
  {
    bool http_failure = a.rc == CURLE_OK;
    bool retryable    = a.body_error   ? is_retryable_body_error(a.error_code)
                        : http_failure ? is_retryable_status(a.status)
                                       : is_retryable_transport(a.rc);
    if (retryable && attempt_ < max_attempts_) {
      KVIKIO_LOG(warn,
                 describe_failure(what, url_, a, attempt_) + "; retrying in " +
                   std::to_string(backoff_.count()) + " ms (attempt " +
                   std::to_string(attempt_ + 1) + " of " + std::to_string(max_attempts_) + ")");
      auto delay = backoff_;
      backoff_   = std::min(backoff_ * 2, std::chrono::milliseconds{4000});
      ++attempt_;
      return delay;
    }
    auto msg = describe_failure(what, url_, a, attempt_);
    if (http_failure) { throw RemoteHttpError(msg, url_, a.status); }
    if (a.rc == CURLE_OPERATION_TIMEDOUT) { throw RemoteTimeoutError(msg, url_, a.status); }
    if (a.rc == CURLE_PARTIAL_FILE) { throw RemoteTruncatedError(msg, url_, a.status); }
    throw RemoteTransportError(msg, url_, a.status);
  }

 private:
  std::size_t max_attempts_;
  std::string url_;
  std::size_t attempt_{1};
  std::chrono::milliseconds backoff_{200};
};

// Runs `attempt_once` until it succeeds, fails in a way that is not retried, or the attempts
// run out; then throws the error that fits the last failure. Before a re-send, `took_effect`
// (when set) may say that the failed attempt was carried out after all: then it returns false
// (done, without an answer).
template <typename AttemptFn, typename DescribeFn>
bool with_retries(const RemoteEndpoint& endpoint,
                  DescribeFn describe,
                  AttemptFn attempt_once,
                  const std::function<bool()>& took_effect = {})
{
  Retries retries(endpoint);
  for (;;) {
    Attempt a = attempt_once();
    if (a.ok) { return true; }
    auto delay = retries.after_failure(a, describe());
    if (took_effect && took_effect()) {
      KVIKIO_LOG(warn,
                 describe() + " " + redact_url(endpoint.url()) +
                   ": the failed attempt took effect; not sent again");
      return false;
    }
    std::this_thread::sleep_for(delay);
  }
}

void set_common_options(CurlHandle& curl, char* errbuf, const RemoteEndpoint& endpoint)
{
  curl.setopt(CURLOPT_NOSIGNAL, 1L);
  curl.setopt(CURLOPT_ERRORBUFFER, errbuf);
  errbuf[0]      = '\0';
  long timeout_s = defaults::http_timeout();
  curl.setopt(CURLOPT_TIMEOUT, timeout_s);
  curl.setopt(CURLOPT_CONNECTTIMEOUT, timeout_s);
  curl.setopt(CURLOPT_BUFFERSIZE, receive_buffer_size);
  curl.setopt(CURLOPT_USERAGENT, "kvikio");
  // Send (and, for S3, sign) the path byte for byte. libcurl would otherwise remove "." and
  // ".." segments (RFC 3986 5.2.4), but S3 keys are not paths: "a/../b" is a key of its own,
  // and "../other-bucket/k" must not turn into another bucket's object.
  curl.setopt(CURLOPT_PATH_AS_IS, 1L);
  // KVIKIO_REMOTE_VERBOSE: libcurl's own trace of every request, on stderr.
  if (defaults::remote_verbose()) { curl.setopt(CURLOPT_VERBOSE, 1L); }
  set_ca_options(curl, endpoint_state(endpoint).ca);
}

}  // namespace

CaSettings CaSettings::from_environment()
{
  return CaSettings{getenv_nonempty("CURL_CA_BUNDLE"),
                    getenv_nonempty("SSL_CERT_FILE"),
                    getenv_nonempty("SSL_CERT_DIR")};
}

void set_redirect_protocols(CurlHandle& curl, const std::string& url)
{
  const bool https = lower(url.substr(0, 8)) == "https://";
  // libcurl's default also follows http -> ftp(s), and https -> http would let a redirect
  // move the data (and WebHDFS's user.name) to plain text.
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85.0
  curl.setopt(CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
#else
  curl.setopt(CURLOPT_REDIR_PROTOCOLS,
              https ? CURLPROTO_HTTPS : (CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

void set_ca_options(CurlHandle& curl, const CaSettings& ca)
{
  curl.setopt(CURLOPT_SSL_VERIFYPEER, 1L);
  curl.setopt(CURLOPT_SSL_VERIFYHOST, 2L);
  // libcurl itself ignores these variables; the curl tool reads them, and users expect the
  // same here (e.g. a corporate proxy CA in CURL_CA_BUNDLE).
  if (ca.ca_bundle) {
    curl.setopt(CURLOPT_CAINFO, ca.ca_bundle->c_str());
    return;
  }
  bool set_any = false;
  if (ca.cert_file) {
    curl.setopt(CURLOPT_CAINFO, ca.cert_file->c_str());
    set_any = true;
  }
  if (ca.cert_dir) {
    curl.setopt(CURLOPT_CAPATH, ca.cert_dir->c_str());
    set_any = true;
  }
  if (set_any) { return; }
  // libcurl's compiled-in bundle may not exist when the library was built on another
  // distribution (wheels); then use the first system bundle that does.
  static const std::optional<std::string> fallback = []() -> std::optional<std::string> {
    char* builtin = nullptr;
    CURL* probe   = curl_easy_init();
    if (probe != nullptr) {
      curl_easy_getinfo(probe, CURLINFO_CAINFO, &builtin);
      std::string builtin_path = builtin != nullptr ? builtin : "";
      curl_easy_cleanup(probe);
      std::error_code ec;
      if (!builtin_path.empty() && std::filesystem::exists(builtin_path, ec)) {
        return std::nullopt;
      }
    }
    for (const char* p : {"/etc/ssl/certs/ca-certificates.crt",
                          "/etc/pki/tls/certs/ca-bundle.crt",
                          "/etc/ssl/ca-bundle.pem",
                          "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
                          "/etc/ssl/cert.pem"}) {
      std::error_code ec;
      if (std::filesystem::exists(p, ec)) { return std::string(p); }
    }
    return std::nullopt;
  }();
  if (fallback) { curl.setopt(CURLOPT_CAINFO, fallback->c_str()); }
}

// ---------------------------------------------------------------------------------------------
// Range reads
// ---------------------------------------------------------------------------------------------
namespace {

struct RangeState {
  CURL* curl{nullptr};
  const Sink* sink{nullptr};
  RangeStyle style{RangeStyle::header};
  std::optional<std::size_t> pinned_size;  // the object's size when its version is pinned
  std::size_t offset{0};                   // file offset this attempt asked for
  std::size_t want{0};                     // bytes this attempt asked for
  std::size_t got{0};                      // bytes delivered to the sink by this attempt
  bool checked{false};                     // the status and Content-Range were checked
  bool error_status{false};
  bool enough{false};  // a 200 from offset 0: the first `want` bytes were taken, rest cut
  std::string error_body;
  std::string range_problem;
  std::string changed_problem;  // the object is not the version the size request saw
  std::exception_ptr sink_error;
  HeaderState headers;
};

std::size_t on_range_body(char* data, std::size_t size, std::size_t n, void* user)
{
  auto* st = static_cast<RangeState*>(user);
  auto len = size * n;
  if (!st->checked) {
    st->checked = true;
    long status = 0;
    curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status >= 300) {
      st->error_status = true;
    } else if (st->style == RangeStyle::header) {
      if (status == 206) {
        if (!st->headers.range_start ||
            static_cast<std::size_t>(*st->headers.range_start) != st->offset) {
          st->range_problem = "the server answered 206 with Content-Range starting at " +
                              (st->headers.range_start ? std::to_string(*st->headers.range_start)
                                                       : std::string("<none>")) +
                              " instead of " + std::to_string(st->offset);
          return 0;
        }
        if (st->pinned_size && st->headers.range_total &&
            static_cast<std::size_t>(*st->headers.range_total) != *st->pinned_size) {
          st->changed_problem = "the object is now " + std::to_string(*st->headers.range_total) +
                                " bytes long (Content-Range total), not the " +
                                std::to_string(*st->pinned_size) +
                                " bytes its size request saw: it changed during the read";
          return 0;
        }
      } else if (st->offset != 0) {
        st->range_problem = "the server ignored the Range header (HTTP status " +
                            std::to_string(status) + " instead of 206)";
        return 0;
      }
    }
  }
  if (st->error_status) {
    if (st->error_body.size() < 4096) {
      st->error_body.append(data, std::min<std::size_t>(len, 4096));
    }
    return len;
  }
  std::size_t take = std::min(len, st->want - st->got);
  if (take > 0) {
    try {
      (*st->sink)(data, take);
    } catch (...) {
      st->sink_error = std::current_exception();
      return 0;
    }
    st->got += take;
  }
  if (take < len) {
    long status = 0;
    curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &status);
    if (st->style == RangeStyle::header && status == 200 && st->offset == 0) {
      st->enough = true;  // a whole-object answer to a range from 0: we have our prefix
    } else {
      st->range_problem = "the server sent more than the " + std::to_string(st->want) +
                          " bytes asked for (HTTP status " + std::to_string(status) + ")";
    }
    return 0;
  }
  return len;
}

std::string range_text(std::size_t offset, std::size_t size)
{
  return "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + size - 1);
}

}  // namespace

struct RangeTransfer::State {
  State(RemoteEndpoint& e, std::size_t off, std::size_t n, Sink s)
    : endpoint(e),
      file_offset(off),
      size(n),
      sink(std::move(s)),
      version(endpoint_state(e).version()),
      retries(e)
  {
  }
  RemoteEndpoint& endpoint;
  std::size_t file_offset;
  std::size_t size;
  Sink sink;
  const ObjectVersion version;  // every piece of a read comes from this version
  Retries retries;
  std::size_t received{0};
  std::unique_ptr<CurlHandle> curl;
  RangeState st;
  char errbuf[CURL_ERROR_SIZE]{};
};

RangeTransfer::RangeTransfer(RemoteEndpoint& endpoint,
                             std::size_t file_offset,
                             std::size_t size,
                             Sink sink)
  : state_(std::make_unique<State>(endpoint, file_offset, size, std::move(sink)))
{
}

RangeTransfer::~RangeTransfer() = default;

CurlHandle& RangeTransfer::start(bool cached)
{
  auto& s = *state_;
  s.curl.reset();  // the previous attempt's handle first: it may be this thread's cached one
  s.curl = cached ? std::make_unique<CurlHandle>() : std::make_unique<CurlHandle>(PrivateCurl{});
  auto& curl = *s.curl;
  set_common_options(curl, s.errbuf, s.endpoint);
  s.endpoint.setopt(curl);
  s.endpoint.setup_range_request(curl, s.file_offset + s.received, s.size - s.received);
  if (!s.version.etag.empty()) { curl.append_header("If-Match: " + s.version.etag); }
  s.st             = RangeState{};
  s.st.pinned_size = s.version.size;
  s.st.curl        = curl.get();
  s.st.sink        = &s.sink;
  s.st.style       = curl.range_style;
  s.st.offset      = s.file_offset + s.received;
  s.st.want        = s.size - s.received;
  curl.setopt(CURLOPT_HEADERFUNCTION, on_header);
  curl.setopt(CURLOPT_HEADERDATA, &s.st.headers);
  curl.setopt(CURLOPT_WRITEFUNCTION, on_range_body);
  curl.setopt(CURLOPT_WRITEDATA, &s.st);
  return curl;
}

std::optional<std::chrono::milliseconds> RangeTransfer::finish(CURLcode rc)
{
  auto& s = *state_;
  Attempt a;
  a.rc = rc;
  curl_easy_getinfo(s.curl->get(), CURLINFO_RESPONSE_CODE, &a.status);
  a.curl_error = s.errbuf;
  s.curl->mark_failed(rc != CURLE_OK);
  s.curl.reset();  // back to the thread cache (or freed) before anything is thrown
  auto& st = s.st;
  s.received += st.got;
  if (st.sink_error) { std::rethrow_exception(st.sink_error); }
  const std::string url = redact_url(s.endpoint.url());
  if (!st.changed_problem.empty()) {
    throw RemoteObjectChangedError(
      "kvikio: GET " + range_text(st.offset, st.want) + " of " + url + ": " + st.changed_problem,
      url,
      a.status);
  }
  if (a.status == 412 && !s.version.etag.empty()) {
    throw RemoteObjectChangedError("kvikio: GET " + range_text(st.offset, st.want) + " of " + url +
                                     ": the object changed during the read (its ETag " +
                                     s.version.etag +
                                     " from the size request no longer matches: HTTP status "
                                     "412 to If-Match)",
                                   url,
                                   a.status);
  }
  if (!st.range_problem.empty()) {
    throw RemoteRangeError(
      "kvikio: GET " + range_text(st.offset, st.want) + " of " + url + ": " + st.range_problem,
      url,
      a.status);
  }
  if (st.enough) { a.rc = CURLE_OK; }
  if (a.rc == CURLE_OK && a.status >= 200 && a.status < 300) {
    if (s.received < s.size) {
      // A complete response that covers less than asked: the server is not resumable here.
      throw RemoteTruncatedError("kvikio: GET " + range_text(st.offset, st.want) + " of " + url +
                                   ": the body ended after " + std::to_string(st.got) +
                                   " bytes (HTTP status " + std::to_string(a.status) + ")",
                                 url,
                                 a.status);
    }
    return std::nullopt;
  }
  if (a.rc == CURLE_OK) { a.error_code = error_code_from_body(st.error_body); }
  // The range still missing: a retry asks for that much.
  return s.retries.after_failure(
    a, "GET " + range_text(s.file_offset + s.received, s.size - s.received) + " of");
}

std::size_t fetch_range(RemoteEndpoint& endpoint,
                        std::size_t file_offset,
                        std::size_t size,
                        const Sink& sink)
{
  RangeTransfer transfer(endpoint, file_offset, size, sink);
  for (;;) {
    auto rc    = transfer.start(true).perform();
    auto delay = transfer.finish(rc);
    if (!delay) { return size; }
    std::this_thread::sleep_for(*delay);
  }
}

// ---------------------------------------------------------------------------------------------
// Metadata requests
// ---------------------------------------------------------------------------------------------
namespace {

struct MetaBody {
  std::string body;
  bool over_cap{false};
};

std::size_t on_meta_body(char* data, std::size_t size, std::size_t n, void* user)
{
  auto* b  = static_cast<MetaBody*>(user);
  auto len = size * n;
  // Abort rather than drain: a server that ignores "Range: bytes=0-0" would otherwise stream
  // the whole object (then be retried) before the probe could fail.
  if (b->body.size() + len > meta_body_cap) {
    b->over_cap = true;
    return 0;
  }
  b->body.append(data, len);
  return len;
}

/// Performs `curl` with the response headers captured into `headers` and the (capped) body
/// into `body`: the attempt carries libcurl's result, the HTTP status and the error text.
Attempt perform_capturing(CurlHandle& curl,
                          HeaderState& headers,
                          MetaBody& body,
                          const char* errbuf)
{
  curl.setopt(CURLOPT_HEADERFUNCTION, on_header);
  curl.setopt(CURLOPT_HEADERDATA, &headers);
  curl.setopt(CURLOPT_WRITEFUNCTION, on_meta_body);
  curl.setopt(CURLOPT_WRITEDATA, &body);
  Attempt a;
  a.rc = curl.perform();
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &a.status);
  a.curl_error = errbuf;
  return a;
}
}  // namespace

Response fetch_meta(RemoteEndpoint& endpoint,
                    MetaKind kind,
                    const std::function<void(CurlHandle&)>& customize)
{
  Response out;
  const char* verb = kind == MetaKind::get          ? "GET"
                     : kind == MetaKind::first_byte ? "GET bytes=0-0"
                                                    : "HEAD";
  with_retries(
    endpoint,
    [&] { return std::string(verb) + " of"; },
    [&]() -> Attempt {
      CurlHandle curl;
      char errbuf[CURL_ERROR_SIZE];
      set_common_options(curl, errbuf, endpoint);
      endpoint.setopt(curl);
      if (customize) { customize(curl); }
      if (kind == MetaKind::head || kind == MetaKind::head_or_status) {
        curl.setopt(CURLOPT_NOBODY, 1L);
      }
      if (kind == MetaKind::first_byte) { curl.setopt(CURLOPT_RANGE, "0-0"); }
      HeaderState headers;
      MetaBody body;
      Attempt a = perform_capturing(curl, headers, body, errbuf);
      if (body.over_cap) {
        if (a.status >= 200 && a.status < 300) {
          auto url        = redact_url(endpoint.url());
          std::string cap = std::to_string(meta_body_cap >> 20) + " MiB";
          if (kind == MetaKind::first_byte) {
            throw RemoteRangeError("kvikio: GET bytes=0-0 of " + url +
                                     ": the server ignored the Range header (HTTP status " +
                                     std::to_string(a.status) + " with a body of more than " + cap +
                                     "; stopped there): cannot tell the object's size",
                                   url,
                                   a.status);
          }
          throw RemoteError("kvikio: " + std::string(verb) + " of " + url +
                              ": the answer is longer than " + cap + " (HTTP status " +
                              std::to_string(a.status) + "; stopped there)",
                            url,
                            a.status);
        }
        a.rc = CURLE_OK;  // an error status with a long body: the status is what matters
      }
      if (a.rc != CURLE_OK) { return a; }
      bool accepted = (kind == MetaKind::first_byte && a.status == 416) ||
                      (kind == MetaKind::head_or_status && (a.status == 405 || a.status == 501));
      if ((a.status < 200 || a.status >= 300) && !accepted) {
        a.error_code = error_code_from_body(body.body);
        return a;
      }
      curl_off_t cl = -1;
      curl_easy_getinfo(curl.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
      out.status         = a.status;
      out.content_length = static_cast<long long>(cl);
      out.range_total    = headers.range_total;
      out.body           = std::move(body.body);
      out.etag           = headers.etag;
      a.ok               = true;
      return a;
    });
  return out;
}

void pin_version(RemoteEndpoint& endpoint, const Response& r, std::size_t size)
{
  endpoint_state(endpoint).pin(ObjectVersion{r.etag, size});
}

std::size_t size_from_head(RemoteEndpoint& endpoint)
{
  auto r = fetch_meta(endpoint, MetaKind::head);
  if (r.content_length < 0) {
    auto url = redact_url(endpoint.url());
    throw RemoteError("kvikio: HEAD of " + url + " gave no Content-Length (HTTP status " +
                        std::to_string(r.status) + "): cannot tell the object's size",
                      url,
                      r.status);
  }
  pin_version(endpoint, r, static_cast<std::size_t>(r.content_length));
  return static_cast<std::size_t>(r.content_length);
}

std::size_t size_from_first_byte(RemoteEndpoint& endpoint)
{
  auto r = fetch_meta(endpoint, MetaKind::first_byte);
  // "bytes=0-0" is unsatisfiable exactly when the object has no first byte; not every server
  // adds the "bytes */0" Content-Range to its 416.
  if (r.status == 416 && !r.range_total) {
    pin_version(endpoint, r, 0);
    return 0;
  }
  if (!r.range_total) {
    auto url = redact_url(endpoint.url());
    throw RemoteRangeError("kvikio: GET bytes=0-0 of " + url +
                             " gave no Content-Range total (HTTP status " +
                             std::to_string(r.status) + "): cannot tell the object's size",
                           url,
                           r.status);
  }
  pin_version(endpoint, r, static_cast<std::size_t>(*r.range_total));
  return static_cast<std::size_t>(*r.range_total);
}

// ---------------------------------------------------------------------------------------------
// Requests with a body (writes)
// ---------------------------------------------------------------------------------------------
namespace {

struct BodyReader {
  const std::vector<std::span<const char>>* pieces{nullptr};
  std::size_t piece{0};
  std::size_t offset{0};
};

std::size_t on_body_read(char* out, std::size_t size, std::size_t n, void* user)
{
  auto* r          = static_cast<BodyReader*>(user);
  std::size_t room = size * n;
  std::size_t done = 0;
  while (room > 0 && r->piece < r->pieces->size()) {
    const auto& p = (*r->pieces)[r->piece];
    std::size_t k = std::min(room, p.size() - r->offset);
    std::memcpy(out + done, p.data() + r->offset, k);
    done += k;
    room -= k;
    r->offset += k;
    if (r->offset == p.size()) {
      ++r->piece;
      r->offset = 0;
    }
  }
  return done;
}

// libcurl rewinds the body when it re-sends a request by itself: on a fresh connection after a
// reused keep-alive one turned out closed, or after a redirect or an authentication round.
int on_body_seek(void* user, curl_off_t offset, int origin)
{
  auto* r = static_cast<BodyReader*>(user);
  if (origin != SEEK_SET || offset < 0) { return CURL_SEEKFUNC_CANTSEEK; }
  auto left = static_cast<std::size_t>(offset);
  r->piece  = 0;
  r->offset = 0;
  while (r->piece < r->pieces->size() && left >= (*r->pieces)[r->piece].size()) {
    left -= (*r->pieces)[r->piece].size();
    ++r->piece;
  }
  if (r->piece == r->pieces->size() && left > 0) { return CURL_SEEKFUNC_FAIL; }
  r->offset = left;
  return CURL_SEEKFUNC_OK;
}

}  // namespace

std::string s3_error_code(const std::string& body) { return error_code_from_body(body); }

Response send_request(RemoteEndpoint& endpoint, const SendRequest& request)
{
  Response out;
  curl_off_t body_size = 0;
  for (const auto& p : request.body) {
    body_size += static_cast<curl_off_t>(p.size());
  }
  out.answered = with_retries(
    endpoint,
    [&] { return request.what; },
    [&]() -> Attempt {
      CurlHandle curl;
      char errbuf[CURL_ERROR_SIZE];
      set_common_options(curl, errbuf, endpoint);
      endpoint.setopt(curl);
      if (!request.url.empty()) { curl.setopt(CURLOPT_URL, request.url.c_str()); }
      // The data node of a WebHDFS write is asked for with an empty request and then sent the
      // body: following the redirect would send every body twice.
      curl.setopt(CURLOPT_FOLLOWLOCATION, 0L);
      BodyReader reader{&request.body, 0, 0};
      if (request.method == "PUT") {
        curl.setopt(CURLOPT_UPLOAD, 1L);
        curl.setopt(CURLOPT_INFILESIZE_LARGE, body_size);
      } else if (request.method == "POST") {
        curl.setopt(CURLOPT_POST, 1L);
        curl.setopt(CURLOPT_POSTFIELDSIZE_LARGE, body_size);
        // libcurl's default for POST is a form type; the bodies here are bytes or XML.
        curl.append_header("Content-Type: application/octet-stream");
      } else {
        curl.setopt(CURLOPT_CUSTOMREQUEST, request.method.c_str());
      }
      if (request.method == "PUT" || request.method == "POST") {
        curl.setopt(CURLOPT_READFUNCTION, on_body_read);
        curl.setopt(CURLOPT_READDATA, &reader);
        // Rewindable, so that libcurl re-sends on a fresh connection when a reused keep-alive
        // one turns out closed. Not for a request that is unsafe to repeat: a connection that
        // dies after the server stored the body looks the same to libcurl, so such a request
        // fails with CURLE_SEND_FAIL_REWIND instead and took_effect decides.
        if (!request.took_effect) {
          curl.setopt(CURLOPT_SEEKFUNCTION, on_body_seek);
          curl.setopt(CURLOPT_SEEKDATA, &reader);
        }
        // Not an "Expect:" header to skip the 100-continue round trip: libcurl 7.88 signs the
        // empty header it then leaves out, and S3 rejects the signature. A short wait instead.
        curl.setopt(CURLOPT_EXPECT_100_TIMEOUT_MS, 50L);
      }
      for (const auto& h : request.headers) {
        curl.append_header(h);
      }
      HeaderState headers;
      MetaBody body;
      Attempt a = perform_capturing(curl, headers, body, errbuf);
      if (body.over_cap) { a.rc = CURLE_OK; }
      if (a.rc != CURLE_OK) { return a; }
      char* location = nullptr;
      curl_easy_getinfo(curl.get(), CURLINFO_REDIRECT_URL, &location);
      const bool redirect = a.status >= 300 && a.status < 400 && location != nullptr;
      if ((a.status < 200 || a.status >= 300) && !redirect) {
        a.error_code = error_code_from_body(body.body);
        return a;
      }
      if (request.error_in_body && body.body.find("<Error>") != std::string::npos) {
        a.error_code = error_code_from_body(body.body);
        a.body_error = true;
        return a;
      }
      out.status   = a.status;
      out.body     = std::move(body.body);
      out.etag     = headers.etag;
      out.location = location != nullptr ? location : "";
      a.ok         = true;
      return a;
    },
    request.took_effect);
  return out;
}

}  // namespace kvikio::detail
