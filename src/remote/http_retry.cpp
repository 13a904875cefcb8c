#include "remote/http_retry.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>

#include <kvikio/defaults.hpp>

#include "remote/response_parse.hpp"
#include "remote/transfer.hpp"

namespace kvikio::detail {
namespace {

// libcurl's receive buffer: larger than its 16 KiB default, so that a fast server fills
// fewer, larger write callbacks (fewer copies' overhead per byte).
constexpr long receive_buffer_size = 512L * 1024;

}  // namespace

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user)
{
  auto len = size * n;
  parse_header_line(std::string_view(data, len), *static_cast<HeaderState*>(user));
  return len;
}

namespace {

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

}  // namespace

Retries::Retries(const RemoteEndpoint& endpoint)
  : max_attempts_(std::max<std::size_t>(1, defaults::http_max_attempts())),
    url_(redact_url(endpoint.url()))
{
}

std::chrono::milliseconds Retries::after_failure(const Attempt& a, const std::string& what)
{
  bool http_failure = a.rc == CURLE_OK;
  bool retryable    = a.body_error   ? is_retryable_body_error(a.error_code)
                      : http_failure ? is_retryable_status(a.status)
                                     : is_retryable_transport(a.rc);
  if (retryable && attempt_ < max_attempts_) {
    KVIKIO_LOG(warn,
               describe_failure(what, url_, a, attempt_) + "; retrying in " +
                 std::to_string(backoff_.count()) + " ms (attempt " + std::to_string(attempt_ + 1) +
                 " of " + std::to_string(max_attempts_) + ")");
    auto delay = backoff_;
    backoff_   = std::min(backoff_ * 2, std::chrono::milliseconds{4000});
    ++attempt_;
    return delay;
  }
  auto msg = describe_failure(what, url_, a, attempt_);
  // The phrases upstream's callers match: libcurl's "URL returned error" for a status that
  // is not retried, and its retry loop's last words when the attempts ran out.
  if (retryable) {
    msg += ". KvikIO: HTTP request reached maximum number of attempts (" +
           std::to_string(max_attempts_) + ")" +
           (http_failure ? ". Got HTTP code " + std::to_string(a.status) : std::string());
  } else if (http_failure && a.status >= 400) {
    msg += " (the requested URL returned error: " + std::to_string(a.status) + ")";
  }
  if (http_failure) { throw RemoteHttpError(msg, url_, a.status); }
  if (a.rc == CURLE_OPERATION_TIMEDOUT) { throw RemoteTimeoutError(msg, url_, a.status); }
  if (a.rc == CURLE_PARTIAL_FILE) { throw RemoteTruncatedError(msg, url_, a.status); }
  throw RemoteTransportError(msg, url_, a.status);
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

}  // namespace kvikio::detail
