#pragma once
// The wording shared by error messages across the library, so that one kind of message
// reads the same wherever it is raised.
#include <cstddef>
#include <string>
#include <vector>

namespace kvikio::detail {

/// "'path' at offset N (M bytes)": the file range an IO error is about.
[[nodiscard]] inline std::string file_range_text(const std::string& path,
                                                 std::size_t offset,
                                                 std::size_t size)
{
  return "'" + path + "' at offset " + std::to_string(offset) + " (" + std::to_string(size) +
         " bytes)";
}

/// "a, b, c": the names a lookup would have accepted, for "unknown name" errors.
[[nodiscard]] inline std::string join_names(const std::vector<std::string>& names)
{
  std::string out;
  for (const auto& n : names) {
    out += (out.empty() ? "" : ", ") + n;
  }
  return out;
}

}  // namespace kvikio::detail
