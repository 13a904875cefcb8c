// The mode string of a file open (src/core/open_file.cpp, open_flags_from_mode): checked
// against a model of the modes people write ("r", "r+", "w", "w+", "a", "a+", with "b").
#include <fcntl.h>

#include <cstdint>
#include <string>

#include "core/open_file.hpp"
#include "fuzz_common.hpp"

using kvikio::fuzz::show;

namespace {

// The model: exactly one of r/w/a, at most one '+', any 'b', nothing else, in any order.
std::optional<int> model(const std::string& mode)
{
  int kinds = 0, pluses = 0;
  char kind = 0;
  for (char c : mode) {
    if (c == 'r' || c == 'w' || c == 'a') {
      ++kinds;
      kind = c;
    } else if (c == '+') {
      ++pluses;
    } else if (c != 'b') {
      return std::nullopt;
    }
  }
  if (kinds != 1 || pluses > 1) { return std::nullopt; }
  int access = pluses == 1 ? O_RDWR : kind == 'r' ? O_RDONLY : O_WRONLY;
  // No O_APPEND for 'a': pwrite at an offset must stay at that offset (parallel pieces).
  int create = kind == 'w' ? O_CREAT | O_TRUNC : kind == 'a' ? O_CREAT : 0;
  return access | create | O_CLOEXEC;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  std::string mode(reinterpret_cast<const char*>(data), size);
  auto got = kvikio::fuzz::value_or_invalid_argument(
    [&] { return kvikio::detail::open_flags_from_mode(mode); }, show(mode));
  auto want = model(mode);
  KVIKIO_FUZZ_CHECK(got == want,
                    "open_flags_from_mode(" + show(mode) +
                      ") = " + (got ? std::to_string(*got) : "invalid_argument") + ", expected " +
                      (want ? std::to_string(*want) : "invalid_argument"));
  return 0;
}
