// Range reads: one logical range request (RangeTransfer), its checks and its resumption.
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "remote/http_retry.hpp"
#include "remote/response_parse.hpp"
#include "remote/transfer.hpp"
#include "remote/url.hpp"

namespace kvikio::detail {

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
  std::string error_body;
  std::string range_problem;
  std::string changed_problem;  // the object is not the version the size request saw
  std::exception_ptr sink_error;
  HeaderState headers;
};

// What upstream's callers match when a server answers a range request with other bytes.
constexpr const char* no_ranges = "maybe the server doesn't support file ranges?";

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
                            std::to_string(status) + " instead of 206): " + no_ranges;
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
    // Also a whole-object answer to a range from offset 0: as upstream, an error on every
    // read, rather than a prefix kept from a server that only seems to work for some reads.
    st->range_problem = "the server sent more than the " + std::to_string(st->want) +
                        " bytes asked for (HTTP status " + std::to_string(status) +
                        "): " + no_ranges;
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

}  // namespace kvikio::detail
