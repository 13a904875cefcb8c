#pragma once
/// @file remote_handle.hpp
/// Reading remote files (HTTP/HTTPS, S3, WebHDFS) into host or device memory.
///
/// A `RemoteHandle` pairs a `RemoteEndpoint` (how to reach one remote object: its URL,
/// authentication and how a byte range is asked for) with the object's size. Reads are HTTP
/// range requests made with libcurl; `pread` splits a large read into `task_size` pieces that
/// run in parallel on the shared pool (`kvikio::defaults::thread_pool()`).
///
/// Robustness settings (kvikio::defaults): `http_timeout` bounds each request, and a request
/// that times out, loses its connection or gets a status listed in `http_status_codes` is
/// retried with exponential back-off, resuming where the data stopped, up to
/// `http_max_attempts` tries in all (one line on stderr per retry). Other failures throw at
/// once. Every error message names the URL with credentials and signatures removed.
///
/// TLS: certificates are verified. The CA bundle is taken from CURL_CA_BUNDLE, SSL_CERT_FILE
/// or SSL_CERT_DIR as set when the endpoint was constructed (as the curl tool does), else
/// libcurl's built-in default, else the first common system bundle that exists. Redirects
/// (HTTP and WebHDFS endpoints) stay on https when the URL is https, and on http(s) otherwise.
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <kvikio/export.hpp>
// At least what upstream's header of this name makes visible: code written for it relies on it.
#include <kvikio/batch_io.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {

/// A libcurl easy handle with the state of one request (defined in the implementation; no
/// libcurl header is needed to use this API).
class CurlHandle;
class RemoteEndpoint;

namespace detail {
/// What an endpoint remembers between requests (the TLS settings read when it was made, the
/// object version its reads are pinned to). Defined in the implementation.
struct EndpointState;
/// `endpoint`'s state, for the transfer code.
EndpointState& endpoint_state(const RemoteEndpoint& endpoint) noexcept;
}  // namespace detail

/// The kinds of remote endpoint.
enum class RemoteEndpointType : std::uint8_t {
  AUTO,              ///< Infer the kind from the URL (see `infer_remote_endpoint_type`).
  S3,                ///< S3 with SigV4 credentials (arguments or the AWS_* environment).
  S3_PUBLIC,         ///< S3 object readable anonymously: no signing.
  S3_PRESIGNED_URL,  ///< S3 presigned URL: the authentication is in the query string.
  WEBHDFS,           ///< Apache Hadoop WebHDFS REST API.
  HTTP,              ///< Any HTTP or HTTPS server that honours Range requests.
};

/// The name of an endpoint type ("S3", "HTTP", ...), for messages.
KVIKIO_EXPORT std::string to_string(RemoteEndpointType type);

// ---------------------------------------------------------------------------------------------
// Errors. All derive from kvikio::Error (RuntimeError in Python) and name the URL, redacted.
// Bad arguments (a malformed URL, a bad scheme, missing credentials or region) throw
// std::invalid_argument (ValueError) instead; a read past the object's known size throws
// kvikio::EndOfFileError before any request is sent.
// ---------------------------------------------------------------------------------------------

/// A remote request failed. `url()` is redacted (no credentials, signatures or tokens);
/// `http_status()` is the last HTTP status received, 0 when no response arrived.
class KVIKIO_EXPORT RemoteError : public Error {
 public:
  /// An error with message `what`, the redacted `url`, and the last HTTP status (0 when no response
  /// came).
  RemoteError(const std::string& what, std::string url, long http_status)
    : Error(what), url_(std::move(url)), http_status_(http_status)
  {
  }
  /// The URL, with credentials, signatures and tokens removed.
  [[nodiscard]] const std::string& url() const noexcept { return url_; }
  /// The last HTTP status received, 0 when no response arrived.
  [[nodiscard]] long http_status() const noexcept { return http_status_; }

 private:
  std::string url_;
  long http_status_;
};

/// The server answered with an error status (404, 403, 416, or a retried status such as 503
/// after the last attempt).
class KVIKIO_EXPORT RemoteHttpError : public RemoteError {
 public:
  /// Takes RemoteError's constructor.
  using RemoteError::RemoteError;
};

/// No usable response: connection refused or dropped, TLS failure, DNS failure, ...
class KVIKIO_EXPORT RemoteTransportError : public RemoteError {
 public:
  /// Takes RemoteError's constructor.
  using RemoteError::RemoteError;
};

/// The request took longer than `defaults::http_timeout()` on every attempt.
class KVIKIO_EXPORT RemoteTimeoutError : public RemoteTransportError {
 public:
  using RemoteTransportError::RemoteTransportError;
};

/// The server ignored the Range header (answered 200 with the object from its start, or a
/// Content-Range other than the one asked for).
class KVIKIO_EXPORT RemoteRangeError : public RemoteError {
 public:
  /// Takes RemoteError's constructor.
  using RemoteError::RemoteError;
};

/// The body was shorter than the range asked for, on every attempt.
class KVIKIO_EXPORT RemoteTruncatedError : public RemoteError {
 public:
  /// Takes RemoteError's constructor.
  using RemoteError::RemoteError;
};

/// The object changed after its size was read: a range request's `If-Match` with the ETag of
/// the size request got 412, or a Content-Range total differs from that size. Reads never mix
/// two versions of an object.
class KVIKIO_EXPORT RemoteObjectChangedError : public RemoteError {
 public:
  /// Takes RemoteError's constructor.
  using RemoteError::RemoteError;
};

/// A write could not be done or committed as asked (the base of the write-side errors below;
/// HTTP failures of a write are RemoteHttpError and the other classes above, as for reads).
/// When a write handle throws one of these from `close`, the upload was aborted first.
class KVIKIO_EXPORT RemoteWriteError : public RemoteError {
 public:
  /// Takes RemoteError's constructor.
  using RemoteError::RemoteError;
};

/// `close` found bytes of [0, size) that no write covered; the message names the holes
/// ("[a, b)"). The upload was aborted: no object became visible.
class KVIKIO_EXPORT RemoteIncompleteWriteError : public RemoteWriteError {
 public:
  using RemoteWriteError::RemoteWriteError;
};

/// A write ends past the size declared when the handle was opened, or past the largest object
/// the part size allows (S3: 10,000 parts). Thrown before any byte of the write is taken.
class KVIKIO_EXPORT RemoteWritePastEndError : public RemoteWriteError {
 public:
  using RemoteWriteError::RemoteWriteError;
};

/// An operation the handle's mode does not allow: a read on a write handle, a write on a read
/// handle, any IO after `close` or `abort`. `http_status()` is 0 (nothing was sent).
class KVIKIO_EXPORT RemoteModeError : public RemoteError {
 public:
  /// Takes RemoteError's constructor.
  using RemoteError::RemoteError;
};

/// `url` with what must never be printed removed: user:password in the authority and the
/// values of query parameters that carry signatures, credentials or tokens. For messages.
KVIKIO_EXPORT std::string redact_url(const std::string& url);

// ---------------------------------------------------------------------------------------------
// Endpoints
// ---------------------------------------------------------------------------------------------

/// How to reach one remote object. Subclasses set the URL and authentication on a curl handle
/// and say how a byte range is requested. Endpoints are used from several pool threads at once
/// by `RemoteHandle::pread`: the methods must be (and the ones here are) thread safe.
///
/// The TLS variables (CURL_CA_BUNDLE, SSL_CERT_FILE, SSL_CERT_DIR) are read once, when the
/// endpoint is constructed, on the constructing thread. `get_file_size` pins the endpoint to
/// the version of the object it saw (its ETag and size): later range requests carry `If-Match`
/// and throw RemoteObjectChangedError if the object was replaced.
class KVIKIO_EXPORT RemoteEndpoint {
 public:
  virtual ~RemoteEndpoint()                        = default;
  RemoteEndpoint(const RemoteEndpoint&)            = delete;
  RemoteEndpoint& operator=(const RemoteEndpoint&) = delete;

  /// Sets the URL and authentication of a request on `curl`.
  virtual void setopt(CurlHandle& curl) = 0;
  /// A description for messages: the kind and the redacted URL.
  [[nodiscard]] virtual std::string str() const = 0;
  /// Asks the server for the object's size (blocking; retried like reads).
  virtual std::size_t get_file_size() = 0;
  /// Sets up `curl` to fetch `size` bytes at `file_offset` (size > 0).
  virtual void setup_range_request(CurlHandle& curl, std::size_t file_offset, std::size_t size);
  /// The endpoint's kind.
  [[nodiscard]] RemoteEndpointType remote_endpoint_type() const noexcept { return type_; }
  /// The URL that requests go to, unredacted (it may hold a presigned signature: do not log).
  [[nodiscard]] const std::string& url() const noexcept { return url_; }

 protected:
  /// For subclasses: the endpoint's kind and the URL its requests go to.
  RemoteEndpoint(RemoteEndpointType type, std::string url);
  /// The endpoint's kind.
  RemoteEndpointType type_;
  /// The URL requests go to (unredacted).
  std::string url_;

 private:
  friend detail::EndpointState& detail::endpoint_state(const RemoteEndpoint& endpoint) noexcept;
  std::shared_ptr<detail::EndpointState> state_;
};

/// A plain HTTP or HTTPS URL. The size comes from a HEAD request's Content-Length.
class KVIKIO_EXPORT HttpEndpoint : public RemoteEndpoint {
 public:
  /// @throws std::invalid_argument if `url` is not an http:// or https:// URL.
  explicit HttpEndpoint(std::string url);
  void setopt(CurlHandle& curl) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;
  /// True for a well-formed http:// or https:// URL with a host.
  static bool is_url_valid(const std::string& url) noexcept;
};

/// An S3 object read with SigV4-signed requests (libcurl's CURLOPT_AWS_SIGV4).
///
/// Credentials come from the arguments, else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
/// AWS_SESSION_TOKEN (sent as x-amz-security-token); the region from the argument, else
/// AWS_DEFAULT_REGION. Missing ones throw std::invalid_argument naming the variable.
class KVIKIO_EXPORT S3Endpoint : public RemoteEndpoint {
 public:
  /// The URL of `object_name` in `bucket_name`. With an endpoint URL (the argument, else
  /// AWS_ENDPOINT_URL) it is path-style "<endpoint>/<bucket>/<object>" (S3-compatible
  /// servers); otherwise virtual-hosted style "https://<bucket>.s3.<region>.amazonaws.com/
  /// <object>". The object key is percent-encoded (RFC 3986 unreserved characters and '/'
  /// kept). @throws std::invalid_argument when a region is needed and there is none.
  static std::string url_from_bucket_and_object(std::string bucket_name,
                                                std::string object_name,
                                                std::optional<std::string> aws_region,
                                                std::optional<std::string> aws_endpoint_url);

  /// Splits "s3://<bucket>/<object>" into bucket and object.
  /// @throws std::invalid_argument naming the URL if it is not of that form.
  static std::pair<std::string, std::string> parse_s3_url(const std::string& s3_url);

  /// An S3 object by its http(s) URL (already encoded).
  explicit S3Endpoint(std::string url,
                      std::optional<std::string> aws_region            = std::nullopt,
                      std::optional<std::string> aws_access_key        = std::nullopt,
                      std::optional<std::string> aws_secret_access_key = std::nullopt,
                      std::optional<std::string> aws_session_token     = std::nullopt);

  /// An S3 object by bucket and object name (see url_from_bucket_and_object).
  explicit S3Endpoint(std::pair<std::string, std::string> bucket_and_object_names,
                      std::optional<std::string> aws_region            = std::nullopt,
                      std::optional<std::string> aws_access_key        = std::nullopt,
                      std::optional<std::string> aws_secret_access_key = std::nullopt,
                      std::optional<std::string> aws_endpoint_url      = std::nullopt,
                      std::optional<std::string> aws_session_token     = std::nullopt);

  void setopt(CurlHandle& curl) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;
  /// True for "s3://bucket/object", or an http(s) URL of an amazonaws.com S3 host that is not
  /// presigned.
  static bool is_url_valid(const std::string& url) noexcept;

 private:
  std::string region_;
  std::string sigv4_;
  std::string access_key_;
  std::string secret_key_;
  std::optional<std::string> session_token_;
};

/// An S3 object readable without credentials: plain unsigned requests.
class KVIKIO_EXPORT S3PublicEndpoint : public RemoteEndpoint {
 public:
  /// `url` is "s3://bucket/object" (turned into an https URL using AWS_DEFAULT_REGION or
  /// AWS_ENDPOINT_URL) or an http(s) URL.
  explicit S3PublicEndpoint(std::string url);
  void setopt(CurlHandle& curl) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;
  /// Whether `url` is an s3:// URL or an http(s) URL of an S3 object that this endpoint accepts.
  static bool is_url_valid(const std::string& url) noexcept;
};

/// An S3 presigned URL. A presigned URL is valid for one method only, so the size comes from
/// a one-byte GET's Content-Range rather than HEAD.
class KVIKIO_EXPORT S3EndpointWithPresignedUrl : public RemoteEndpoint {
 public:
  /// `presigned_url` is the full URL with its query string (X-Amz-Signature, ...). Throws
  /// std::invalid_argument when it is not an http(s) URL with a signature.
  explicit S3EndpointWithPresignedUrl(std::string presigned_url);
  void setopt(CurlHandle& curl) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;
  /// True for an http(s) URL whose query has X-Amz-Algorithm and X-Amz-Signature (or the
  /// older AWSAccessKeyId/Signature/Expires form).
  static bool is_url_valid(const std::string& url) noexcept;
};

/// The endpoint type `RemoteHandle::open` would pick for `url` in AUTO mode, without a request:
/// for s3:// URLs (any case) and unsigned amazonaws.com S3 URLs, S3 when AWS_ACCESS_KEY_ID
/// and AWS_SECRET_ACCESS_KEY are set, else S3_PUBLIC (as upstream); S3_PRESIGNED_URL for
/// presigned ones, WEBHDFS for URLs whose path starts with /webhdfs/v1/, HTTP for other
/// http(s) URLs.
/// @throws std::invalid_argument naming the URL when none fits (e.g. a bad scheme).
KVIKIO_EXPORT RemoteEndpointType infer_remote_endpoint_type(const std::string& url);

// ---------------------------------------------------------------------------------------------
// RemoteHandle
// ---------------------------------------------------------------------------------------------

namespace detail {
class RemoteWriter;
}

/// What a RemoteHandle is opened for.
enum class RemoteOpenMode : std::uint8_t {
  READ,    ///< Read an existing object (the default).
  WRITE,   ///< Create the object (replacing one of the same name when it becomes visible).
  APPEND,  ///< WebHDFS only: add bytes at the end of an existing file.
};

/// How a write handle uploads. All fields are optional.
struct RemoteWriteOptions {
  /// S3: the multipart part size, at least 5 MiB (S3's minimum) and at most 5 GiB; default
  /// max(task_size, 5 MiB), raised so that a declared `nbytes` fits in 10,000 parts. WebHDFS:
  /// the size of each APPEND (default as for S3). Presigned URLs: the buffering granule.
  std::optional<std::size_t> part_size{};
  /// The object's size, when known: writes past it throw RemoteWritePastEndError, and the last
  /// part goes out as soon as it is complete rather than at close.
  std::optional<std::size_t> nbytes{};
  /// The most parts held in host memory at once (partly written, or waiting for their upload);
  /// default max(8, 2 x num_threads). A write that needs one more waits for an upload to finish,
  /// or throws RemoteWriteError when none is under way (too many parts partly written).
  std::optional<std::size_t> max_buffered_parts{};
  /// WebHDFS WRITE: replace an existing file (op=CREATE&overwrite=true). When false, CREATE
  /// fails with the server's 403 on an existing file.
  bool overwrite{true};
};

/// RemoteHandle::pread_batch reads two host requests with one range request when the bytes
/// between them are at most this many (and the joined range is at most task_size): a range
/// request costs a round trip and a few hundred bytes of headers, which at the speeds where
/// this matters (tens of Gbit/s, sub-millisecond round trips) is worth tens of KiB of
/// transfer, so reading a gap of up to 64 KiB costs less than asking for its two sides
/// separately.
inline constexpr std::size_t remote_coalesce_gap = std::size_t{64} << 10;

/// A handle on one remote object, for reading (the default) or writing. Thread safe: several
/// reads, or several writes, may run at once. Movable, not copyable. Futures from `pread` must
/// not outlive the handle.
///
/// Writing (RemoteOpenMode::WRITE / APPEND; endpoints S3, S3_PRESIGNED_URL and WEBHDFS):
/// `write`/`pwrite` take bytes at any offsets, in any order, from host or device memory (device
/// memory is staged through the pinned bounce-buffer pool), copying them into part buffers
/// before they return; parts of `part_size` bytes go out in the background on the shared pool
/// as soon as they are complete: S3 as a multipart upload (parts in parallel, each retried per
/// http_max_attempts / http_status_codes), WebHDFS as CREATE then APPENDs in file order
/// (following the name node's redirect to a data node). An S3 object smaller than one part is
/// one PutObject at close; a presigned PUT URL allows one PUT only, so the whole object is
/// held in host memory until close. Host memory is bounded by `max_buffered_parts` x
/// `part_size` (except for presigned URLs). Bytes once complete in a part that went out cannot
/// be written again (RemoteWriteError).
///
/// Commit or nothing: `close()` makes the object visible only when the bytes written cover
/// [0, size) with no hole (size: the declared `nbytes`, else the end of the furthest write);
/// otherwise, on any failed part, or on `abort()` or destruction without `close()`, the upload
/// is aborted (S3 AbortMultipartUpload: no parts are left behind; WebHDFS WRITE: the bytes go
/// to a hidden sibling `.<name>.<random>.kvikio-partial`, renamed onto the file at close and
/// deleted on abort, so an existing file keeps its contents; APPEND: truncated back to the
/// file's former length). close() and abort() may run while other threads write: writes under
/// way finish first, later ones throw RemoteModeError.
class KVIKIO_EXPORT RemoteHandle {
 public:
  /// Opens `url` as `remote_endpoint_type` (AUTO: inferred, trying the types of `allow_list`
  /// in order, default S3, S3_PUBLIC, S3_PRESIGNED_URL, WEBHDFS, HTTP; as upstream, an S3 URL
  /// whose signed endpoint cannot be made or whose signed size request fails is opened as
  /// S3_PUBLIC when that is allowed). With an explicit type, it must be
  /// in `allow_list` when one is given. `nbytes`, when known, saves the size request.
  /// Blocking. @throws std::invalid_argument naming the URL for a URL no allowed type accepts;
  /// RemoteError if the size request fails.
  static RemoteHandle open(const std::string& url,
                           RemoteEndpointType remote_endpoint_type = RemoteEndpointType::AUTO,
                           std::optional<std::vector<RemoteEndpointType>> allow_list = std::nullopt,
                           std::optional<std::size_t> nbytes = std::nullopt);

  /// A handle on `endpoint` whose size is known to be `nbytes` (no request is made).
  RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint, std::size_t nbytes);
  /// A handle on `endpoint`; asks the server for the size (blocking).
  explicit RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint);

  /// A handle on `endpoint` opened for `mode`. READ is as the constructor above. WRITE sends
  /// nothing yet; APPEND (WebHDFS) asks for the file's current size. Blocking.
  /// @throws std::invalid_argument for an endpoint that cannot be written (HTTP, S3_PUBLIC),
  /// APPEND on an S3 endpoint, or a part size outside [5 MiB, 5 GiB]; RemoteError.
  RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint,
               RemoteOpenMode mode,
               RemoteWriteOptions options = {});

  /// Moves the handle; `other` is left without an endpoint.
  RemoteHandle(RemoteHandle&&) noexcept = default;
  /// Moves the handle; `other` is left without an endpoint.
  RemoteHandle& operator=(RemoteHandle&&) noexcept = default;
  RemoteHandle(const RemoteHandle&)                = delete;
  RemoteHandle& operator=(const RemoteHandle&)     = delete;
  ~RemoteHandle();

  /// The kind of endpoint this handle reads from.
  [[nodiscard]] RemoteEndpointType remote_endpoint_type() const noexcept;
  /// The object's size in bytes (known since construction; no request). On a write handle: the
  /// declared size, else the end of the furthest write so far.
  [[nodiscard]] std::size_t nbytes() const noexcept;
  /// What the handle was opened for.
  [[nodiscard]] RemoteOpenMode mode() const noexcept { return mode_; }
  /// The endpoint this handle reads from.
  [[nodiscard]] const RemoteEndpoint& endpoint() const noexcept { return *endpoint_; }

  /// Reads `size` bytes at `file_offset` into `buf` (host or device memory; device memory is
  /// staged through a pinned bounce buffer) on the calling thread, as consecutive range requests of
  /// at most `defaults::task_size()` bytes (each retried and resumed as described above). Blocking.
  /// Returns `size`. A zero-byte read sends nothing.
  /// @throws EndOfFileError naming the URL if the range ends past nbytes(); RemoteError.
  std::size_t read(void* buf, std::size_t size, std::size_t file_offset = 0);

  /// Like read, split into `task_size` pieces run in parallel on the shared pool. Returns at
  /// once; the future yields `size` or rethrows the first error. Range checking happens
  /// before the future is returned (throws EndOfFileError). `buf` must stay valid until the
  /// future is ready.
  std::future<std::size_t> pread(void* buf,
                                 std::size_t size,
                                 std::size_t file_offset = 0,
                                 std::size_t task_size   = defaults::task_size(),
                                 ThreadPool* thread_pool = nullptr);

  /// Reads every request of `requests` (host or device buffers, any order, overlapping or
  /// not) in one call. Every request is checked before any request is sent (a null buffer
  /// with a size, a range past nbytes(), a device range outside its allocation): a bad one
  /// throws, naming its index ("batch request 3: ..."), and nothing is sent. Requests into host
  /// memory whose ranges lie within remote_coalesce_gap of each other are read as one range
  /// request of at most `defaults::task_size()` bytes (larger requests are cut into pieces of
  /// that size, as pread cuts them) whose bytes are scattered into their buffers; the range
  /// requests go out in parallel (on the pool, or on the reactors with MULTI_POLL, see
  /// RemoteIOBackend). Non-blocking: the future yields the total bytes of the requests, or
  /// rethrows the error of the lowest-numbered failed request once every range request has
  /// finished (none is left running either way; the message of an error names the range
  /// request, which covers every request joined into it). Zero-size requests send nothing; an empty
  /// batch is ready with 0. The buffers must stay valid until the future is ready.
  std::future<std::size_t> pread_batch(const std::vector<IORequest>& requests);

  /// Writes `size` bytes of `buf` (host or device memory) at `file_offset`, or, without one, at
  /// the end of the previous `write` (0 at first). Returns once the bytes are copied into part
  /// buffers (the caller may reuse `buf`); complete parts upload in the background. Returns
  /// `size`. Blocking when `max_buffered_parts` is reached, until an upload finishes.
  /// @throws RemoteModeError on a read handle or after close/abort; RemoteWritePastEndError;
  /// RemoteWriteError (rewriting bytes already sent, too many parts partly written); the error
  /// of an earlier background upload (the handle is then failed: close aborts).
  std::size_t write(const void* buf,
                    std::size_t size,
                    std::optional<std::size_t> file_offset = std::nullopt);

  /// Like `write` at `file_offset`; the bytes are taken (copied) before it returns, so the
  /// future is ready at once with `size` (kept for symmetry with `pread`).
  std::future<std::size_t> pwrite(const void* buf, std::size_t size, std::size_t file_offset = 0);

  /// Commits a write handle (see the class comment): waits for the uploads, checks that
  /// [0, size) is covered, sends the rest and completes the upload. Blocking. On any failure
  /// the upload is aborted and the error thrown (RemoteIncompleteWriteError naming the holes,
  /// or the failed request's error). Idempotent; on a read handle it only closes it.
  void close();

  /// Aborts a write handle's upload (waits for parts under way, then S3 AbortMultipartUpload
  /// or the WebHDFS clean-up). Never throws; idempotent; nothing on a read handle.
  void abort() noexcept;

  /// False after close() or abort().
  [[nodiscard]] bool is_open() const noexcept;

 private:
  void check_range(std::size_t size, std::size_t file_offset) const;
  void check_readable(const char* op) const;
  std::future<std::size_t> read_ranges(const std::vector<IORequest>& requests,
                                       std::size_t task_size,
                                       ThreadPool* thread_pool);
  std::shared_ptr<RemoteEndpoint> endpoint_;
  std::size_t nbytes_{};
  RemoteOpenMode mode_{RemoteOpenMode::READ};
  std::shared_ptr<detail::RemoteWriter> writer_;
  bool closed_{false};
};

}  // namespace kvikio
