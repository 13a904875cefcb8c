#include "info.hpp"

#include <cstdio>

#include <kvikio/defaults.hpp>
#include <kvikio/version.hpp>

#include "options.hpp"

namespace kvikio::tool {
namespace {

const char* source_name(SettingSource s)
{
  switch (s) {
    case SettingSource::DEFAULT:
      return "default";
    case SettingSource::ENVIRONMENT:
      return "environment";
    case SettingSource::SET:
      return "set";
  }
  return "?";
}

}  // namespace

int run_info(int argc, char** argv, int first)
{
  Args args(argc, argv, first);
  if (auto extra = args.next_option()) {
    std::fprintf(stderr, "kvikio info: unknown option --%s\n", extra->c_str());
    return 2;
  }
  std::printf("kvikio %s\n\n", KVIKIO_VERSION_STRING);
  std::printf("compat mode resolves to: %s\n\n",
              defaults::is_compat_mode_preferred() ? "POSIX (compat mode on)" : "cuFile");
  std::printf("settings:\n");
  std::printf("  %-22s %-28s %-24s %s\n", "name", "environment variable", "value", "source");
  for (const auto& s : defaults::list()) {
    std::printf("  %-22s %-28s %-24s %s\n",
                s.name.c_str(),
                s.env_var.c_str(),
                s.value.c_str(),
                source_name(s.source));
  }
  return 0;
}

}  // namespace kvikio::tool
