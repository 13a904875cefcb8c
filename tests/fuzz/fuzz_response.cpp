// What servers send back (src/remote/response_parse.{hpp,cpp}): Content-Range and ETag header
// lines, S3 XML error codes, the WebHDFS FileStatus length. A size or a range start taken from
// a response is what the reads trust, so each parse is checked for consistency.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"
#include "remote/response_parse.hpp"

using kvikio::fuzz::show;
namespace detail = kvikio::detail;

namespace {

void check_range(const detail::ContentRange& r, const std::string& ctx)
{
  KVIKIO_FUZZ_CHECK(r.first.has_value() == r.last.has_value(), ctx);
  KVIKIO_FUZZ_CHECK(r.first || r.total, ctx + ": neither a range nor a total");
  if (r.first) {
    KVIKIO_FUZZ_CHECK(
      *r.first >= 0 && *r.first <= *r.last,
      ctx + ": first " + std::to_string(*r.first) + " last " + std::to_string(*r.last));
  }
  if (r.total) {
    KVIKIO_FUZZ_CHECK(*r.total >= 0, ctx + ": total " + std::to_string(*r.total));
    if (r.last) {
      KVIKIO_FUZZ_CHECK(
        *r.last < *r.total,
        ctx + ": last " + std::to_string(*r.last) + " total " + std::to_string(*r.total));
    }
  }
}

void check_content_range(const std::string& value)
{
  const auto ctx = "parse_content_range(" + show(value) + ")";
  auto r         = detail::parse_content_range(value);
  if (!r) { return; }
  check_range(*r, ctx);
  // Formatted back the way a server writes it, it parses to the same range.
  std::string text = "bytes ";
  text += r->first ? std::to_string(*r->first) + "-" + std::to_string(*r->last) : "*";
  text += "/";
  text += r->total ? std::to_string(*r->total) : "*";
  auto again = detail::parse_content_range(text);
  KVIKIO_FUZZ_CHECK(
    again && again->first == r->first && again->last == r->last && again->total == r->total,
    ctx + " does not survive formatting as " + show(text));
}

void check_header_lines(std::string_view text)
{
  detail::HeaderState st;
  while (!text.empty()) {
    auto nl   = text.find('\n');
    auto line = text.substr(0, nl == std::string_view::npos ? text.size() : nl + 1);
    detail::parse_header_line(line, st);
    text.remove_prefix(line.size());
    const auto ctx = "after header line " + show(line);
    if (st.range_start || st.range_total) {
      check_range(detail::ContentRange{st.range_start, st.range_end, st.range_total}, ctx);
    }
    // A pinned ETag goes into an If-Match header line as it is: one quoted printable token.
    KVIKIO_FUZZ_CHECK(
      st.etag.empty() ||
        (st.etag.size() >= 2 && st.etag.front() == '"' && st.etag.back() == '"' &&
         std::all_of(
           st.etag.begin(), st.etag.end(), [](unsigned char c) { return c > 0x20 && c < 0x7f; })),
      ctx + ": etag " + show(st.etag));
  }
}

void check_error_code(const std::string& body)
{
  auto code = detail::error_code_from_body(body);
  if (code.empty()) { return; }
  // Only the code goes into messages: a short word that the body really had as its <Code>.
  KVIKIO_FUZZ_CHECK(code.size() <= 64 &&
                      std::all_of(code.begin(),
                                  code.end(),
                                  [](unsigned char c) {
                                    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
                                  }) &&
                      body.find("<Code>" + code + "</Code>") != std::string::npos,
                    "error_code_from_body(" + show(body) + ") = " + show(code));
}

void check_webhdfs_length(const std::string& body)
{
  auto n = detail::webhdfs_file_length(body);
  if (!n) { return; }
  // The digits after "length": are the number returned (leading zeros aside): a length that
  // does not fit must not wrap to a small one.
  auto key = body.find("\"length\"");
  KVIKIO_FUZZ_CHECK(key != std::string::npos, "length from " + show(body));
  auto pos = body.find(':', key) + 1;
  while (pos < body.size() && std::isspace(static_cast<unsigned char>(body[pos]))) {
    ++pos;
  }
  auto end = pos;
  while (end < body.size() && std::isdigit(static_cast<unsigned char>(body[end]))) {
    ++end;
  }
  auto digits = body.substr(pos, end - pos);
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  KVIKIO_FUZZ_CHECK(digits == std::to_string(*n),
                    "webhdfs_file_length(" + show(body) + ") = " + std::to_string(*n) +
                      ", the body says " + digits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  std::string all(reinterpret_cast<const char*>(data), size);
  check_content_range(all);
  check_header_lines(all);
  check_error_code(all);
  check_webhdfs_length(all);
  return 0;
}
