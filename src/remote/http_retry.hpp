#pragma once
// What every request of the transfer engine shares: one attempt's outcome, the retry policy
// (which failures are retried, the back-off, the error thrown at the end), the options set on
// every easy handle. Used by range reads (range_get.cpp), metadata and body requests
// (requests.cpp) and the multi reactor (through RangeTransfer).
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <thread>

#include <kvikio/remote_handle.hpp>

#include "core/logger.hpp"
#include "remote/curl_handle.hpp"
#include "remote/url.hpp"

namespace kvikio::detail {

/// libcurl's CURLOPT_HEADERFUNCTION for a HeaderState (its `user`).
std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user);

/// What one attempt of a request came to.
struct Attempt {
  CURLcode rc{CURLE_OK};
  long status{0};
  std::string curl_error;
  std::string error_code;
  bool ok{false};          // a complete, successful response
  bool body_error{false};  // a 2xx status whose body is an S3 <Error> document (error_code)
};

/// Counts the attempts of one logical request and decides after each failed one: the delay
/// before the next attempt, or the error that fits the failure (thrown). The blocking loops and
/// the multi reactor (remote/reactor.cpp) both use it, so retries and errors are the same on
/// either backend.
class Retries {
 public:
  explicit Retries(const RemoteEndpoint& endpoint);
  /// The delay before the next attempt after the failed attempt `a` of request `what` ("GET
  /// bytes=0-9 of"); throws the fitting RemoteError when it is not retried.
  std::chrono::milliseconds after_failure(const Attempt& a, const std::string& what);

 private:
  std::size_t max_attempts_;
  std::string url_;
  std::size_t attempt_{1};
  std::chrono::milliseconds backoff_{200};
};

/// Runs `attempt_once` until it succeeds, fails in a way that is not retried, or the attempts
/// run out; then throws the error that fits the last failure. Before a re-send, `took_effect`
/// (when set) may say that the failed attempt was carried out after all: then it returns false
/// (done, without an answer).
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

/// The options of every request: no signals, `errbuf`, the timeouts, the receive buffer, the
/// path sent as is, the verbose trace when asked, the CA settings of `endpoint`.
void set_common_options(CurlHandle& curl, char* errbuf, const RemoteEndpoint& endpoint);

}  // namespace kvikio::detail
