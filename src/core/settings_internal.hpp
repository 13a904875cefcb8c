#pragma once
// For tests: the settings are otherwise read from the environment once per process.

namespace kvikio::detail {

/// Reads every setting from the environment again (defaults where unset), keeping the pool.
/// Throws std::invalid_argument on a bad value and leaves the current settings unchanged.
void reload_settings_from_environment();

}  // namespace kvikio::detail
