// Progress lines, the JSON writer and the table rows of the benchmarks.
#include "report.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace kvikio::bench {

void progress(std::string_view tag, std::string_view line)
{
  std::cerr << "[" << tag << "] " << line << std::endl;
}

std::string json_string(std::string_view s)
{
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(
        buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void JsonWriter::separate()
{
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) { out_ += ", "; }
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::raw(std::string_view text)
{
  separate();
  out_ += text;
  return *this;
}

JsonWriter& JsonWriter::begin_object()
{
  raw("{");
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object()
{
  first_.pop_back();
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::begin_array()
{
  raw("[");
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array()
{
  first_.pop_back();
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k)
{
  raw(json_string(k) + ": ");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) { return raw(json_string(s)); }

JsonWriter& JsonWriter::value(bool b) { return raw(b ? "true" : "false"); }

JsonWriter& JsonWriter::value(double d)
{
  // JSON has no inf or nan (a ratio over a zero limit): such a number is unknown.
  if (!std::isfinite(d)) { return null(); }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", d);
  return raw(buf);
}

JsonWriter& JsonWriter::null() { return raw("null"); }

void print_table_header()
{
  std::printf("%-8s %-8s %12s   %-34s %7s\n", "op", "memory", "kvikio GB/s", "limit GB/s", "ratio");
}

void print_table_row(std::string_view op,
                     std::string_view memory,
                     double ours_gbps,
                     std::optional<double> limit_gbps,
                     std::string_view limit_name)
{
  const std::string o(op), m(memory);
  // Appended, not "(" + string: GCC 12 warns falsely (-Wrestrict) on that at -O3.
  std::string name;
  name.reserve(limit_name.size() + 2);
  name.append("(").append(limit_name).append(")");
  if (!limit_gbps) {
    std::printf("%-8s %-8s %12.2f   %7s %-26s %7s\n",
                o.c_str(),
                m.c_str(),
                ours_gbps,
                "n/a",
                name.c_str(),
                "n/a");
    return;
  }
  std::printf("%-8s %-8s %12.2f   %7.2f %-26s %6.2fx\n",
              o.c_str(),
              m.c_str(),
              ours_gbps,
              *limit_gbps,
              name.c_str(),
              ours_gbps / *limit_gbps);
}

void print_table_note_row(std::string_view op,
                          std::string_view memory,
                          double ours_gbps,
                          std::string_view note)
{
  const std::string o(op), m(memory), n(note);
  std::printf("%-8s %-8s %12.2f   %-34s\n", o.c_str(), m.c_str(), ours_gbps, n.c_str());
}

}  // namespace kvikio::bench
