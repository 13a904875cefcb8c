// Metadata requests (HEAD, small GETs, the size probes) and requests with a body (writes).
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "remote/http_retry.hpp"
#include "remote/response_parse.hpp"
#include "remote/transfer.hpp"
#include "remote/url.hpp"

namespace kvikio::detail {

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
