#pragma once
#include <string>

namespace kvikio::detail {

/// "linked libcurl 7.88.1 (OpenSSL/3.0.17)": the libcurl this library uses, for `kvikio info`.
std::string libcurl_description();

}  // namespace kvikio::detail
