// What `kvikio info` says about libcurl: it is linked, not loaded at run time, so it is always
// there; its version and TLS backend decide what remote URLs can be read.
#include <curl/curl.h>

#include <string>

#include "remote/curl_status.hpp"

namespace kvikio::detail {

std::string libcurl_description()
{
  const auto* v    = curl_version_info(CURLVERSION_NOW);
  std::string text = std::string("linked libcurl ") + v->version;
  if (v->ssl_version != nullptr) { text += std::string(" (") + v->ssl_version + ")"; }
  return text;
}

}  // namespace kvikio::detail
