#pragma once
// kvikio::CurlHandle: one request's libcurl easy handle, borrowed from a per-thread cache.
#include <curl/curl.h>

#include <cstddef>
#include <string>

#include <kvikio/error.hpp>

namespace kvikio {

/// How a range is asked for: a Range header answered by 206 + Content-Range (HTTP, S3), or
/// by the URL itself answered by 200 with exactly the bytes (WebHDFS op=OPEN).
enum class RangeStyle { header, url };

/// libcurl's global initialisation, once per process (before any easy or multi handle).
void curl_init_once();

/// Tag: a CurlHandle with an easy handle of its own, not the thread's cached one (the many
/// concurrent transfers of a multi handle; their connections live in the multi's cache).
struct PrivateCurl {};

class CurlHandle {
 public:
  /// Borrows this thread's cached easy handle, reset to defaults (the connection cache stays,
  /// so consecutive requests to one host reuse their connection).
  CurlHandle();
  explicit CurlHandle(PrivateCurl);
  ~CurlHandle();
  CurlHandle(const CurlHandle&)            = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;

  template <typename T>
  void setopt(CURLoption option, T value)
  {
    auto rc = curl_easy_setopt(handle_, option, value);
    if (rc != CURLE_OK) { throw_setopt_error(option, rc); }
  }
  /// Adds a request header ("Name: value"); the list lives as long as this object.
  void append_header(const std::string& header);
  [[nodiscard]] CURL* get() const noexcept { return handle_; }
  /// Runs the request (curl_easy_perform). After a failed one the handle is not cached again.
  CURLcode perform() noexcept;
  /// Records a failed transfer run elsewhere (a multi handle): as after a failed perform().
  void mark_failed(bool failed) noexcept { failed_ = failed_ || failed; }

  /// Set by RemoteEndpoint::setup_range_request: how the response to a range is checked.
  RangeStyle range_style{RangeStyle::header};

 private:
  [[noreturn]] static void throw_setopt_error(CURLoption option, CURLcode rc);
  CURL* handle_;
  curl_slist* headers_{nullptr};
  bool failed_{false};
};

}  // namespace kvikio
