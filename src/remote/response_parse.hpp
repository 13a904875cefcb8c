#pragma once
// Parsers for what servers send back (header lines, S3 error bodies, WebHDFS FileStatus
// JSON). Kept apart from libcurl so that unit tests and the fuzzers (tests/fuzz) can feed
// them any bytes.
#include <optional>
#include <string>
#include <string_view>

namespace kvikio::detail {

/// A Content-Range value ("bytes first-last/total", "bytes first-last/*", "bytes */total").
/// Every number present is >= 0, first <= last, and last < total when both are known.
struct ContentRange {
  std::optional<long long> first, last;  // both or neither ("bytes */total": neither)
  std::optional<long long> total;        // absent for "/*"
};

/// `value` (the text after "Content-Range:", surrounding white space allowed) parsed, or
/// nullopt when it is malformed, does not fit a long long or is inconsistent (RFC 9110
/// §14.4: such a range is invalid).
std::optional<ContentRange> parse_content_range(std::string_view value);

/// The headers of the response being received. A redirect (WebHDFS) starts a new status
/// line, so everything is reset there.
struct HeaderState {
  std::optional<long long> range_start, range_end, range_total;
  std::string etag;  // strong ETags only: If-Match compares strongly, a weak one never matches
};

/// Takes one header line as libcurl delivers it (with its CRLF) into `st`. An invalid
/// Content-Range clears the range fields: the response has no usable one.
void parse_header_line(std::string_view line, HeaderState& st);

/// The machine-readable <Code> of an S3-style XML error body, or empty. Only that word goes
/// into messages: the rest of an S3 error can hold credentials.
std::string error_code_from_body(const std::string& body);

/// The "length" of a WebHDFS GETFILESTATUS answer ({"FileStatus":{..., "length":1234}}), or
/// nullopt when there is none or it does not fit a size_t.
std::optional<std::size_t> webhdfs_file_length(std::string_view body);

}  // namespace kvikio::detail
