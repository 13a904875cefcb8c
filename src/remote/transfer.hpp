#pragma once
// The HTTP transfer engine shared by every endpoint: one logical request, retried and resumed.
// By concern: curl_handle.cpp (easy handles and their per-thread cache), http_retry.{hpp,cpp}
// (attempts, the retry policy, common options), tls.cpp (CA and redirect options),
// range_get.cpp (range reads), requests.cpp (metadata requests and requests with a body).
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <kvikio/remote_handle.hpp>

#include "remote/curl_handle.hpp"

namespace kvikio::detail {

/// The CA settings from the environment (CURL_CA_BUNDLE, SSL_CERT_FILE, SSL_CERT_DIR).
struct CaSettings {
  std::optional<std::string> ca_bundle, cert_file, cert_dir;
  /// Reads the three variables; call on the thread that makes the endpoint, never on pool
  /// threads (getenv races with a setenv elsewhere, such as Python's os.environ).
  static CaSettings from_environment();
};

/// The version of an object that range requests are pinned to.
struct ObjectVersion {
  std::string etag;                 // a strong ETag as sent by the server; empty when none
  std::optional<std::size_t> size;  // the size the size request saw
};

struct EndpointState {
  const CaSettings ca{CaSettings::from_environment()};

  [[nodiscard]] ObjectVersion version() const
  {
    std::lock_guard lock(mutex_);
    return version_;
  }
  void pin(ObjectVersion v)
  {
    std::lock_guard lock(mutex_);
    version_ = std::move(v);
  }

 private:
  mutable std::mutex mutex_;
  ObjectVersion version_;
};

/// Receives a range's bytes in order, in pieces as they arrive from the network. This is the
/// one place where the destination's memory kind matters: a host sink copies into the buffer;
/// a device sink fills a pinned bounce buffer and copies it to the device when full,
/// overlapping the copy with the rest of the transfer. It may throw to abort the transfer.
using Sink = std::function<void(const char* data, std::size_t nbytes)>;

/// Fetches `size` > 0 bytes at `file_offset` of `endpoint`'s object into `sink`, retrying
/// per kvikio::defaults and resuming after the bytes already delivered. Returns `size`.
/// Blocking, on the calling thread. Throws RemoteError subclasses.
std::size_t fetch_range(RemoteEndpoint& endpoint,
                        std::size_t file_offset,
                        std::size_t size,
                        const Sink& sink);

/// One logical range request (what fetch_range runs), split into its attempts so that an
/// event loop can drive it: start() prepares an attempt's easy handle, the caller performs it
/// (curl_easy_perform, or a multi handle), and finish() judges the result with the same
/// checks, retry decisions and errors on every backend. Resumes after the bytes delivered.
class RangeTransfer {
 public:
  /// `size` > 0 bytes at `file_offset` of `endpoint`'s object into `sink`. `endpoint` must
  /// outlive the transfer.
  RangeTransfer(RemoteEndpoint& endpoint, std::size_t file_offset, std::size_t size, Sink sink);
  ~RangeTransfer();
  RangeTransfer(const RangeTransfer&)            = delete;
  RangeTransfer& operator=(const RangeTransfer&) = delete;
  /// Prepares the next attempt. `cached`: on this thread's cached easy handle (a blocking
  /// perform on this thread); else on a private one (a multi handle's). Throws on setup errors.
  CurlHandle& start(bool cached);
  /// After the attempt's handle finished with `rc` (and left any multi handle): nothing when
  /// every byte arrived; else the delay before the next attempt (call start() again then).
  /// Throws the request's error when it is not retried (or the attempts ran out).
  std::optional<std::chrono::milliseconds> finish(CURLcode rc);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// What a metadata request returned.
struct Response {
  long status{0};
  long long content_length{-1};          // -1 when absent
  std::optional<long long> range_total;  // "/total" of a Content-Range, when present
  std::string body;                      // the body (metadata requests only; capped)
  std::string etag;                      // a strong ETag, when the server sent one
  std::string location;                  // a redirect's target (send_request without following)
  bool answered{true};  // false: send_request's took_effect said a failed attempt was done
};

/// What a metadata request is: HEAD, a GET of a small body, or a one-byte range GET.
/// head_or_status is a HEAD whose 405 and 501 answers are returned rather than thrown.
enum class MetaKind { head, get, first_byte, head_or_status };

/// Runs a metadata request on `endpoint` (after `endpoint.setopt`, `customize` may change the
/// URL), with retries. Success is any 2xx, or 416 for first_byte (an empty object).
Response fetch_meta(RemoteEndpoint& endpoint,
                    MetaKind kind,
                    const std::function<void(CurlHandle&)>& customize = {});

/// Pins `endpoint`'s later range requests to the object version of size request `r`: its ETag
/// (If-Match) and `size` (checked against Content-Range totals).
void pin_version(RemoteEndpoint& endpoint, const Response& r, std::size_t size);

/// A request that may carry a body (the write side: S3 PutObject and multipart, WebHDFS).
struct SendRequest {
  std::string method;                       // "PUT", "POST", "DELETE"
  std::string url;                          // empty: the endpoint's URL
  std::vector<std::span<const char>> body;  // sent in order, read in place (no copy)
  std::vector<std::string> headers;         // extra request headers
  std::string what;                         // for messages, e.g. "PUT (UploadPart 3) of"
  /// For a request that is not safe to repeat (a WebHDFS APPEND): asked before each re-send,
  /// after a failed attempt that would be retried, whether that attempt was carried out anyway
  /// (e.g. stored, then answered 500 or too late). true: the request is done (the Response has
  /// `answered` false); false: it is sent again. It may throw (neither state: fail). Unset: the
  /// request is repeated as it is (PUTs of whole objects and parts, S3 Complete, metadata).
  std::function<bool()> took_effect{};
  /// S3 answers CompleteMultipartUpload with 200 and an <Error> document when it fails after
  /// the headers went out: such an answer is a failure, retried when its code is InternalError,
  /// SlowDown, ServiceUnavailable or RequestTimeout.
  bool error_in_body{false};
};

/// Sends `request` on `endpoint` (after `endpoint.setopt`), retried per kvikio::defaults
/// (the body is sent again from its start, also when libcurl re-sends it by itself). Redirects are
/// not followed: a 3xx answer with a Location is returned (WebHDFS names the data node that way).
/// Success is any 2xx or such a 3xx; the body of the answer is kept up to meta_body_cap. Throws
/// RemoteError subclasses.
Response send_request(RemoteEndpoint& endpoint, const SendRequest& request);

/// The <Code> of an S3 error document, when `body` is one (empty otherwise). Only that word
/// may go into messages: the rest of an S3 error can hold credentials.
std::string s3_error_code(const std::string& body);

/// The size of an object from a HEAD request's Content-Length.
std::size_t size_from_head(RemoteEndpoint& endpoint);
/// The size of an object from a one-byte GET's Content-Range (presigned URLs allow GET only).
std::size_t size_from_first_byte(RemoteEndpoint& endpoint);

/// Sets the TLS CA options the way curl users expect (CURL_CA_BUNDLE, SSL_CERT_FILE,
/// SSL_CERT_DIR as read into `ca`, then libcurl's default, then common system bundles).
void set_ca_options(CurlHandle& curl, const CaSettings& ca);

/// Lets redirects go to https only when `url` is https, else to http and https (never to
/// ftp and the other protocols libcurl would follow by default).
void set_redirect_protocols(CurlHandle& curl, const std::string& url);

/// Follows up to 5 redirects from `url`, to the protocols set_redirect_protocols allows (HTTP
/// download links, WebHDFS's OPEN through the data node).
void follow_redirects(CurlHandle& curl, const std::string& url);

/// The largest metadata body kept (GETFILESTATUS JSON, an error body, a probe's answer); a
/// request whose body is longer is aborted.
inline constexpr std::size_t meta_body_cap = std::size_t{1} << 20;

}  // namespace kvikio::detail
