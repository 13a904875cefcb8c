// The library's log (core/logger.hpp): KVIKIO_LOG_LEVEL parsing, the level filter, and
// KVIKIO_LOG_FILE receiving the lines, spdlog or not.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/logger.hpp"
#include "test_utils.hpp"

using kvikio::detail::LogLevel;

namespace {

std::string slurp(const std::string& path)
{
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// Points the log at a file (and a level) for one scope, then back at stderr / warn.
class ScopedLogFile {
 public:
  ScopedLogFile(const std::string& path, const char* level)
  {
    ::setenv("KVIKIO_LOG_FILE", path.c_str(), 1);
    if (level != nullptr) { ::setenv("KVIKIO_LOG_LEVEL", level, 1); }
    kvikio::detail::reload_log_from_environment();
  }
  ~ScopedLogFile()
  {
    ::unsetenv("KVIKIO_LOG_FILE");
    ::unsetenv("KVIKIO_LOG_LEVEL");
    kvikio::detail::reload_log_from_environment();
  }
  ScopedLogFile(const ScopedLogFile&)            = delete;
  ScopedLogFile& operator=(const ScopedLogFile&) = delete;
};

}  // namespace

TEST(Logger, LevelNamesParseInAnyCase)
{
  using kvikio::detail::parse_log_level;
  EXPECT_EQ(parse_log_level("trace"), LogLevel::trace);
  EXPECT_EQ(parse_log_level("DEBUG"), LogLevel::debug);
  EXPECT_EQ(parse_log_level(" Info "), LogLevel::info);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::warn);
  EXPECT_EQ(parse_log_level("warning"), LogLevel::warn);
  EXPECT_EQ(parse_log_level("error"), LogLevel::error);
  EXPECT_EQ(parse_log_level("critical"), LogLevel::critical);
  EXPECT_EQ(parse_log_level("OFF"), LogLevel::off);
  EXPECT_EQ(parse_log_level("verbose"), std::nullopt);
  EXPECT_EQ(parse_log_level(""), std::nullopt);
  EXPECT_EQ(parse_log_level("3"), std::nullopt);
  for (auto lv : {LogLevel::trace, LogLevel::info, LogLevel::off}) {
    EXPECT_EQ(parse_log_level(kvikio::detail::to_string(lv)), lv);
  }
}

TEST(Logger, DefaultIsWarnAndTheEnvironmentSetsIt)
{
  ::unsetenv("KVIKIO_LOG_LEVEL");
  kvikio::detail::reload_log_from_environment();
  EXPECT_EQ(kvikio::detail::log_level(), LogLevel::warn);
  EXPECT_TRUE(kvikio::detail::log_enabled(LogLevel::error));
  EXPECT_FALSE(kvikio::detail::log_enabled(LogLevel::info));
  kvikio::test::TempDir dir;
  {
    ScopedLogFile file(dir.file("debug.log"), "Debug");
    EXPECT_EQ(kvikio::detail::log_level(), LogLevel::debug);
    EXPECT_TRUE(kvikio::detail::log_enabled(LogLevel::debug));
    EXPECT_FALSE(kvikio::detail::log_enabled(LogLevel::trace));
  }
  {
    ScopedLogFile file(dir.file("off.log"), "off");
    EXPECT_FALSE(kvikio::detail::log_enabled(LogLevel::critical));
    EXPECT_FALSE(kvikio::detail::log_enabled(LogLevel::off));
  }
  EXPECT_EQ(kvikio::detail::log_level(), LogLevel::warn);
}

TEST(Logger, LinesGoToTheLogFileFilteredByLevel)
{
  kvikio::test::TempDir dir;
  const auto path = dir.file("kvikio.log");
  {
    ScopedLogFile file(path, "info");
    KVIKIO_LOG(debug, std::string("not written"));
    KVIKIO_LOG(info, std::string("an info line"));
    KVIKIO_LOG(warn, std::string("a warning line"));
    kvikio::detail::set_log_level(LogLevel::error);
    KVIKIO_LOG(warn, std::string("filtered warning"));
    KVIKIO_LOG(error, std::string("an error line"));
  }
  const auto text = slurp(path);
  EXPECT_EQ(text.find("not written"), std::string::npos) << text;
  EXPECT_EQ(text.find("filtered warning"), std::string::npos) << text;
  EXPECT_NE(text.find("[kvikio] [info] an info line\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[kvikio] [warning] a warning line\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[kvikio] [error] an error line\n"), std::string::npos) << text;
  // A second open truncates the file.
  {
    ScopedLogFile file(path, nullptr);
    KVIKIO_LOG(warn, std::string("fresh"));
  }
  const auto again = slurp(path);
  EXPECT_EQ(again.find("an info line"), std::string::npos) << again;
  EXPECT_NE(again.find("fresh"), std::string::npos) << again;
}

TEST(Logger, BadLevelKeepsWarnAndSaysSo)
{
  kvikio::test::TempDir dir;
  const auto path = dir.file("bad.log");
  {
    ScopedLogFile file(path, "loud");
    EXPECT_EQ(kvikio::detail::log_level(), LogLevel::warn);
  }
  const auto text = slurp(path);
  EXPECT_NE(text.find("KVIKIO_LOG_LEVEL='loud'"), std::string::npos) << text;
}

TEST(Logger, UnwritableLogFileFallsBackToStderr)
{
  // Under a plain file: no directory can be made there (spdlog creates missing ones).
  kvikio::test::TempDir dir;
  const auto plain = dir.file("plain");
  kvikio::test::write_file(plain, std::vector<char>(1, 'x'));
  testing::internal::CaptureStderr();
  {
    ScopedLogFile file(plain + "/kvikio.log", nullptr);
    KVIKIO_LOG(error, std::string("still seen"));
  }
  const auto err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("KVIKIO_LOG_FILE"), std::string::npos) << err;
  EXPECT_NE(err.find("still seen"), std::string::npos) << err;
}
