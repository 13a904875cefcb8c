#pragma once
// Shared by the libFuzzer targets: splitting an input into fields, and invariant checks that
// print what broke (with the input's fields) before aborting, so a finding reads like a test
// failure rather than a bare stack trace.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace kvikio::fuzz {

/// The input as fields separated by '\n' (at most `n`; the last one takes the rest).
inline std::vector<std::string> fields(const std::uint8_t* data, std::size_t size, std::size_t n)
{
  std::vector<std::string> out;
  std::string_view s(reinterpret_cast<const char*>(data), size);
  while (out.size() + 1 < n) {
    auto nl = s.find('\n');
    if (nl == std::string_view::npos) { break; }
    out.emplace_back(s.substr(0, nl));
    s.remove_prefix(nl + 1);
  }
  out.emplace_back(s);
  out.resize(n);
  return out;
}

/// `s` with non-printable bytes as \xNN, quoted: for messages.
inline std::string show(std::string_view s)
{
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + "\"";
}

[[noreturn]] inline void fail(const char* check,
                              const char* file,
                              int line,
                              const std::string& what)
{
  std::fprintf(stderr,
               "\n*** kvikio fuzz invariant broken at %s:%d\n*** check: %s\n*** %s\n",
               file,
               line,
               check,
               what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// Runs `f`; its value, or nullopt when it threw std::invalid_argument (the library's error for
/// bad input). Any other exception breaks the invariant that bad input gets the typed error.
template <typename F>
auto value_or_invalid_argument(F&& f, const std::string& context) -> std::optional<decltype(f())>
{
  try {
    return f();
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    fail("only std::invalid_argument is thrown",
         __FILE__,
         __LINE__,
         std::string("threw ") + typeid(e).name() + ": " + e.what() + "\n*** input: " + context);
  } catch (...) {
    fail("only std::invalid_argument is thrown",
         __FILE__,
         __LINE__,
         "threw a non-std exception\n*** input: " + context);
  }
}

/// The message of the std::invalid_argument `f` throws, or nullopt when it returns.
template <typename F>
std::optional<std::string> invalid_argument_message(F&& f)
{
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace kvikio::fuzz

/// Aborts with `what` (a std::string expression, evaluated only on failure) unless `cond`.
#define KVIKIO_FUZZ_CHECK(cond, what)                                         \
  do {                                                                        \
    if (!(cond)) { ::kvikio::fuzz::fail(#cond, __FILE__, __LINE__, (what)); } \
  } while (0)
