#pragma once
/// @file cufile/config.hpp
/// Where cuFile's configuration file is.
#include <string>

#include <kvikio/export.hpp>

namespace kvikio {

/// The cuFile configuration file in use: CUFILE_ENV_PATH_JSON when set, else
/// /etc/cufile.json; an empty string when that file does not exist. Read once per process.
[[nodiscard]] KVIKIO_EXPORT const std::string& config_path();

}  // namespace kvikio
