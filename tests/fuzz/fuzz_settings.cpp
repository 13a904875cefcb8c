// Settings from the environment (src/core/settings.cpp): every variable of the settings table
// is read through the same parsers (flags, integers with ranges, status-code lists, compat
// mode). A value is either read or refused with std::invalid_argument; a value that was read
// is in its range, shows in list() as text that reads back as the same value, and set()
// accepts it.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <variant>

#include <kvikio/compat_mode.hpp>
#include <kvikio/defaults.hpp>

#include "core/settings_internal.hpp"
#include "fuzz_common.hpp"

using kvikio::defaults;
using kvikio::fuzz::show;
using kvikio::fuzz::value_or_invalid_argument;

namespace {

std::string describe(const kvikio::SettingValue& v)
{
  struct {
    std::string operator()(bool b) const { return b ? "bool true" : "bool false"; }
    std::string operator()(std::int64_t n) const { return "int " + std::to_string(n); }
    std::string operator()(kvikio::CompatMode m) const
    {
      return "mode " + std::string(kvikio::to_string(m));
    }
    std::string operator()(const std::vector<std::int64_t>& c) const
    {
      std::string out = "codes";
      for (auto x : c) {
        out += " " + std::to_string(x);
      }
      return out;
    }
    std::string operator()(const std::string& s) const { return "text " + show(s); }
  } visitor;
  return std::visit(visitor, v);
}

bool reload()
{
  return value_or_invalid_argument(
           [] {
             kvikio::detail::reload_settings_from_environment();
             return true;
           },
           "reload")
    .has_value();
}

void check_setting(const kvikio::SettingInfo& info, const std::string& text)
{
  const auto ctx = info.env_var + "=" + show(text);
  ::setenv(info.env_var.c_str(), text.c_str(), 1);
  if (!reload()) {
    ::unsetenv(info.env_var.c_str());
    return;
  }
  const auto value = defaults::get(info.name);
  // Only a CHOICE setting holds a word, and never an empty one.
  if (const auto* word = std::get_if<std::string>(&value)) {
    const bool choice = info.name == "batch_backend" || info.name == "remote_io_backend" ||
                        info.name == "remote_io_reactor_dispatch";
    KVIKIO_FUZZ_CHECK(choice && !word->empty(), ctx + " stored as text");
  }
  if (const auto* n = std::get_if<std::int64_t>(&value)) {
    KVIKIO_FUZZ_CHECK(*n >= 0, ctx + " read as " + describe(value));
    if (info.name == "num_threads") { KVIKIO_FUZZ_CHECK(*n >= 1 && *n <= 4096, ctx); }
  }
  if (const auto* c = std::get_if<std::vector<std::int64_t>>(&value)) {
    KVIKIO_FUZZ_CHECK(!c->empty(), ctx + " read as no codes");
    for (auto code : *c) {
      KVIKIO_FUZZ_CHECK(code >= 100 && code <= 599, ctx + " read as " + describe(value));
    }
  }
  // list() shows the value as the environment spells it: that text reads back the same.
  std::string shown;
  for (const auto& i : defaults::list()) {
    if (i.name == info.name) {
      KVIKIO_FUZZ_CHECK(i.source == kvikio::SettingSource::ENVIRONMENT, ctx);
      shown = i.value;
    }
  }
  ::setenv(info.env_var.c_str(), shown.c_str(), 1);
  KVIKIO_FUZZ_CHECK(reload(), ctx + " shown as " + show(shown) + ", which is refused");
  KVIKIO_FUZZ_CHECK(defaults::get(info.name) == value,
                    ctx + " read as " + describe(value) + ", shown as " + show(shown) +
                      ", read back as " + describe(defaults::get(info.name)));
  ::unsetenv(info.env_var.c_str());
  // set() takes what the environment gave.
  KVIKIO_FUZZ_CHECK(value_or_invalid_argument(
                      [&] {
                        defaults::set(info.name, value);
                        return true;
                      },
                      ctx),
                    ctx + ": set() refuses " + describe(value));
  KVIKIO_FUZZ_CHECK(defaults::get(info.name) == value, ctx);
}

void check_compat_mode(const std::string& text)
{
  auto mode =
    value_or_invalid_argument([&] { return kvikio::parse_compat_mode_str(text); }, show(text));
  if (!mode) { return; }
  KVIKIO_FUZZ_CHECK(kvikio::parse_compat_mode_str(kvikio::to_string(*mode)) == *mode,
                    show(text) + " read as " + std::string(kvikio::to_string(*mode)));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
  // Every check starts from the defaults (nothing else set in the environment).
  for (const auto& info : defaults::list()) {
    ::unsetenv(info.env_var.c_str());
  }
  kvikio::detail::reload_settings_from_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  if (size == 0) { return 0; }
  static const auto settings = defaults::list();
  const auto& info           = settings[data[0] % settings.size()];
  // An environment value ends at its first NUL.
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  text = text.substr(0, text.find('\0'));
  check_setting(info, text);
  check_compat_mode(text);
  kvikio::detail::reload_settings_from_environment();  // back to the defaults
  return 0;
}
