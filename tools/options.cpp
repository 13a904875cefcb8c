#include "options.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace kvikio::tool {

std::size_t parse_bytes(const std::string& option, const std::string& text)
{
  std::size_t used = 0;
  double number    = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double scale     = 0;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KiB" || unit == "k") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "MiB") {
    scale = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GiB") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "T" || unit == "TiB") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  }
  if (used == 0 || scale == 0 || number < 0 || !std::isfinite(number)) {
    throw std::invalid_argument("--" + option + ": '" + text +
                                "' is not a size (examples: 4096, 64KiB, 16M, 1GiB)");
  }
  return static_cast<std::size_t>(number * scale);
}

unsigned long parse_count(const std::string& option, const std::string& text)
{
  std::size_t used         = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value == 0 || text[0] == '-') {
    throw std::invalid_argument("--" + option + ": '" + text + "' is not a positive integer");
  }
  return static_cast<unsigned long>(value);
}

std::string format_bytes(double bytes)
{
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u               = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

Args::Args(int argc, char** argv, int first) : args_(argv + first, argv + argc) {}

std::optional<std::string> Args::next_option()
{
  if (inline_value_) { throw std::invalid_argument("--" + current_ + " takes no value"); }
  if (pos_ >= args_.size()) { return std::nullopt; }
  std::string arg = args_[pos_++];
  if (arg.rfind("--", 0) != 0) { throw std::invalid_argument("unexpected argument '" + arg + "'"); }
  arg      = arg.substr(2);
  auto eq  = arg.find('=');
  current_ = arg.substr(0, eq);
  inline_value_.reset();
  if (eq != std::string::npos) { inline_value_ = arg.substr(eq + 1); }
  return current_;
}

std::string Args::value()
{
  if (inline_value_) {
    auto v = *inline_value_;
    inline_value_.reset();
    return v;
  }
  if (pos_ >= args_.size()) { throw std::invalid_argument("--" + current_ + " needs a value"); }
  return args_[pos_++];
}

}  // namespace kvikio::tool
