// CurlHandle, and the per-thread cache of easy handles that keeps connections alive.
#include "remote/curl_handle.hpp"

#include <pthread.h>

#include <mutex>
#include <string>

#include <kvikio/error.hpp>

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
