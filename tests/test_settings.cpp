#include <gtest/gtest.h>

#include <cstdlib>

#include <kvikio/defaults.hpp>

#include "core/settings_internal.hpp"
#include "test_utils.hpp"

using kvikio::defaults;

namespace {

/// Sets an environment variable for one scope and reloads the settings around it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv()
  {
    ::unsetenv(name_);
    kvikio::detail::reload_settings_from_environment();
  }

 private:
  const char* name_;
};

}  // namespace

TEST(Settings, DefaultsMatchTheContract)
{
  kvikio::detail::reload_settings_from_environment();
  EXPECT_EQ(defaults::compat_mode(), kvikio::CompatMode::AUTO);
  EXPECT_EQ(defaults::num_threads(), 1U);
  EXPECT_EQ(defaults::task_size(), 4U << 20);
  EXPECT_EQ(defaults::gds_threshold(), 16U << 10);
  EXPECT_EQ(defaults::bounce_buffer_size(), 16U << 20);
  EXPECT_FALSE(defaults::auto_direct_io_read());
  EXPECT_TRUE(defaults::auto_direct_io_write());
  EXPECT_EQ(defaults::http_max_attempts(), 3U);
  EXPECT_EQ(defaults::http_status_codes(), (std::vector<int>{429, 500, 502, 503, 504}));
  EXPECT_EQ(defaults::http_timeout(), 60);
  for (const auto& s : defaults::list()) {
    EXPECT_EQ(s.source, kvikio::SettingSource::DEFAULT) << s.name;
  }
}

TEST(Settings, EnvironmentValuesAreRead)
{
  ScopedEnv a("KVIKIO_NTHREADS", "3");
  ScopedEnv b("KVIKIO_COMPAT_MODE", "on");
  ScopedEnv c("KVIKIO_HTTP_STATUS_CODES", "500, 503");
  ScopedEnv d("KVIKIO_AUTO_DIRECT_IO_READ", "yes");
  kvikio::detail::reload_settings_from_environment();
  EXPECT_EQ(defaults::num_threads(), 3U);
  EXPECT_EQ(defaults::thread_pool().get_thread_count(), 3U);
  EXPECT_EQ(defaults::compat_mode(), kvikio::CompatMode::ON);
  EXPECT_EQ(defaults::http_status_codes(), (std::vector<int>{500, 503}));
  EXPECT_TRUE(defaults::auto_direct_io_read());
  bool found = false;
  for (const auto& s : defaults::list()) {
    if (s.name == "num_threads") {
      found = true;
      EXPECT_EQ(s.source, kvikio::SettingSource::ENVIRONMENT);
      EXPECT_EQ(s.value, "3");
      EXPECT_EQ(s.env_var, "KVIKIO_NTHREADS");
    }
  }
  EXPECT_TRUE(found);
}

TEST(Settings, BadEnvironmentValuesNameTheVariable)
{
  const std::pair<const char*, const char*> cases[] = {
    {"KVIKIO_NTHREADS", "0"},
    {"KVIKIO_NTHREADS", "many"},
    {"KVIKIO_TASK_SIZE", "0"},
    {"KVIKIO_TASK_SIZE", "-5"},
    {"KVIKIO_COMPAT_MODE", "maybe"},
    {"KVIKIO_HTTP_STATUS_CODES", "500,abc"},
    {"KVIKIO_HTTP_STATUS_CODES", "999"},
    {"KVIKIO_AUTO_DIRECT_IO_WRITE", "perhaps"},
    {"KVIKIO_HTTP_TIMEOUT", "0"},
    {"KVIKIO_BOUNCE_BUFFER_SIZE", "1.5"},
  };
  for (auto [name, value] : cases) {
    ScopedEnv env(name, value);
    KVIKIO_EXPECT_THROW_WITH(
      kvikio::detail::reload_settings_from_environment(), std::invalid_argument, name);
    KVIKIO_EXPECT_THROW_WITH(
      kvikio::detail::reload_settings_from_environment(), std::invalid_argument, value);
  }
}

TEST(Settings, BadSetsAreRejectedAndLeaveTheValue)
{
  kvikio::test::ScopedSettings restore;
  defaults::set_task_size(1 << 20);
  KVIKIO_EXPECT_THROW_WITH(defaults::set_task_size(0), std::invalid_argument, "task_size");
  EXPECT_EQ(defaults::task_size(), 1U << 20);
  KVIKIO_EXPECT_THROW_WITH(defaults::set_num_threads(0), std::invalid_argument, "num_threads");
  KVIKIO_EXPECT_THROW_WITH(
    defaults::set_bounce_buffer_size(0), std::invalid_argument, "bounce_buffer_size");
  KVIKIO_EXPECT_THROW_WITH(
    defaults::set_http_status_codes({200, 1000}), std::invalid_argument, "1000");
  KVIKIO_EXPECT_THROW_WITH(defaults::set_http_timeout(-1), std::invalid_argument, "http_timeout");
  KVIKIO_EXPECT_THROW_WITH(
    defaults::set_http_max_attempts(0), std::invalid_argument, "http_max_attempts");
}

TEST(Settings, SettingNumThreadsResizesThePool)
{
  kvikio::test::ScopedSettings restore;
  defaults::set_num_threads(5);
  EXPECT_EQ(defaults::thread_pool().get_thread_count(), 5U);
  defaults::set_num_threads(2);
  EXPECT_EQ(defaults::thread_pool().get_thread_count(), 2U);
  EXPECT_EQ(defaults::thread_pool_nthreads(), 2U);
}

TEST(Settings, CompatModeOnIsAlwaysPreferred)
{
  EXPECT_TRUE(defaults::is_compat_mode_preferred(kvikio::CompatMode::ON));
  EXPECT_FALSE(defaults::is_compat_mode_preferred(kvikio::CompatMode::OFF));
}
