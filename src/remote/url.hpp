#pragma once
// Small URL helpers for the remote endpoints: splitting, percent-encoding, redaction.
#include <optional>
#include <string>

namespace kvikio::detail {

/// The parts of "scheme://[userinfo@]host[:port][/path][?query][#fragment]".
struct UrlParts {
  std::string scheme;  // lower case
  std::string userinfo;
  std::string host;  // lower case
  std::string port;
  std::string path;  // starts with '/' or is empty
  std::string query;
};

/// `s` in ASCII lower case.
std::string lower(std::string s);

/// True when `url` starts with a well-formed "scheme://" (RFC 3986: a letter, then letters,
/// digits, '+', '-' or '.'), whatever the scheme.
bool has_url_scheme(const std::string& url) noexcept;

/// Splits `url`; nullopt if it has no "scheme://" or no host.
std::optional<UrlParts> split_url(const std::string& url);

/// True when `url` starts with "s3://" in any case ("S3://" too: schemes are case-insensitive,
/// RFC 3986 section 3.1).
bool is_s3_url(const std::string& url) noexcept;

/// True for an http:// or https:// URL with a host.
bool is_http_url(const std::string& url) noexcept;

/// Percent-encodes everything but RFC 3986 unreserved characters, and '/' when `keep_slash`.
std::string percent_encode(const std::string& s, bool keep_slash);

/// `s` with its %XX escapes decoded (a malformed escape is kept as it is).
std::string percent_decode(const std::string& s);

/// The value of query parameter `name` in `query` (not decoded), if present.
std::optional<std::string> query_param(const std::string& query, const std::string& name);

/// The value of environment variable `name` when set and non-empty.
std::optional<std::string> getenv_nonempty(const char* name);

}  // namespace kvikio::detail
