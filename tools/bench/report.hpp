#pragma once
// How the benchmarks report: progress lines on stderr, one JSON writer (strings escaped,
// numbers formatted alike) and one table row format for "ours next to the limit".
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kvikio::bench {

/// Prints "[tag] line" on stderr and flushes (progress must show before a long run ends).
void progress(std::string_view tag, std::string_view line);

/// `s` as a JSON string literal: quotes, backslashes and control bytes escaped.
std::string json_string(std::string_view s);

/// Builds one JSON document in the benchmarks' layout (", " between members, ": " after a
/// key). Values: strings (escaped), integers, bools, doubles (3 decimals; a non-finite one
/// as null) and null. Not thread safe; misuse (a key outside an object) is not checked.
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  /// The next member's key; the value follows with value() or begin_*().
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(double d);
  template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) JsonWriter& value(T n)
  {
    return raw(std::to_string(n));
  }
  JsonWriter& null();

  /// key(k).value(v).
  template <class T>
  JsonWriter& field(std::string_view k, const T& v)
  {
    return key(k).value(v);
  }
  /// key(k).value(*v), or key(k).null() when `v` is empty.
  template <class T>
  JsonWriter& field(std::string_view k, const std::optional<T>& v)
  {
    key(k);
    return v ? value(*v) : null();
  }

  /// The document so far.
  [[nodiscard]] const std::string& str() const noexcept { return out_; }

 private:
  JsonWriter& raw(std::string_view text);
  void separate();

  std::string out_;
  std::vector<bool> first_;  // per open container: no member written yet
  bool after_key_{false};
};

/// The header of the results table: op, memory, kvikio GB/s, limit GB/s, ratio.
void print_table_header();
/// One row: our GB/s next to a limit's, named in parentheses, and the ratio; with no limit
/// (nullopt) the limit and ratio columns say n/a.
void print_table_row(std::string_view op,
                     std::string_view memory,
                     double ours_gbps,
                     std::optional<double> limit_gbps,
                     std::string_view limit_name);
/// A row without a limit: `note` in the limit column and no ratio.
void print_table_note_row(std::string_view op,
                          std::string_view memory,
                          double ours_gbps,
                          std::string_view note);

}  // namespace kvikio::bench
