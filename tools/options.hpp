#pragma once
// Command-line parsing shared by the tool's subcommands.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kvikio::tool {

/// Parses a byte count such as "4096", "64KiB", "16M", "1.5GiB" (K/M/G/T are powers of 1024).
/// Throws std::invalid_argument naming the option and value.
std::size_t parse_bytes(const std::string& option, const std::string& text);
/// Parses a positive integer; throws std::invalid_argument naming the option and value.
unsigned long parse_count(const std::string& option, const std::string& text);
/// "1.00 GiB", "12.5 MiB", ...
std::string format_bytes(double bytes);

/// Walks argv as --name value / --name=value / --flag.
class Args {
 public:
  Args(int argc, char** argv, int first);
  /// The next option name (without leading dashes), or nullopt at the end.
  std::optional<std::string> next_option();
  /// The value of the current option; throws when missing.
  std::string value();

 private:
  std::vector<std::string> args_;
  std::size_t pos_{0};
  std::string current_;
  std::optional<std::string> inline_value_;
};

}  // namespace kvikio::tool
