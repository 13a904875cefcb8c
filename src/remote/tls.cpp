// TLS and redirect options of every request: the CA settings curl users expect, and the
// protocols a redirect may go to.
#include <filesystem>
#include <optional>
#include <string>

#include "remote/transfer.hpp"
#include "remote/url.hpp"

namespace kvikio::detail {

CaSettings CaSettings::from_environment()
{
  return CaSettings{getenv_nonempty("CURL_CA_BUNDLE"),
                    getenv_nonempty("SSL_CERT_FILE"),
                    getenv_nonempty("SSL_CERT_DIR")};
}

void set_redirect_protocols(CurlHandle& curl, const std::string& url)
{
  const bool https = lower(url.substr(0, 8)) == "https://";
  // libcurl's default also follows http -> ftp(s), and https -> http would let a redirect
  // move the data (and WebHDFS's user.name) to plain text.
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85.0
  curl.setopt(CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
#else
  curl.setopt(CURLOPT_REDIR_PROTOCOLS,
              https ? CURLPROTO_HTTPS : (CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

void follow_redirects(CurlHandle& curl, const std::string& url)
{
  curl.setopt(CURLOPT_FOLLOWLOCATION, 1L);
  curl.setopt(CURLOPT_MAXREDIRS, 5L);
  set_redirect_protocols(curl, url);
}

void set_ca_options(CurlHandle& curl, const CaSettings& ca)
{
  curl.setopt(CURLOPT_SSL_VERIFYPEER, 1L);
  curl.setopt(CURLOPT_SSL_VERIFYHOST, 2L);
  // libcurl itself ignores these variables; the curl tool reads them, and users expect the
  // same here (e.g. a corporate proxy CA in CURL_CA_BUNDLE).
  if (ca.ca_bundle) {
    curl.setopt(CURLOPT_CAINFO, ca.ca_bundle->c_str());
    return;
  }
  bool set_any = false;
  if (ca.cert_file) {
    curl.setopt(CURLOPT_CAINFO, ca.cert_file->c_str());
    set_any = true;
  }
  if (ca.cert_dir) {
    curl.setopt(CURLOPT_CAPATH, ca.cert_dir->c_str());
    set_any = true;
  }
  if (set_any) { return; }
  // libcurl's compiled-in bundle may not exist when the library was built on another
  // distribution (wheels); then use the first system bundle that does.
  static const std::optional<std::string> fallback = []() -> std::optional<std::string> {
    char* builtin = nullptr;
    CURL* probe   = curl_easy_init();
    if (probe != nullptr) {
      curl_easy_getinfo(probe, CURLINFO_CAINFO, &builtin);
      std::string builtin_path = builtin != nullptr ? builtin : "";
      curl_easy_cleanup(probe);
      std::error_code ec;
      if (!builtin_path.empty() && std::filesystem::exists(builtin_path, ec)) {
        return std::nullopt;
      }
    }
    for (const char* p : {"/etc/ssl/certs/ca-certificates.crt",
                          "/etc/pki/tls/certs/ca-bundle.crt",
                          "/etc/ssl/ca-bundle.pem",
                          "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
                          "/etc/ssl/cert.pem"}) {
      std::error_code ec;
      if (std::filesystem::exists(p, ec)) { return std::string(p); }
    }
    return std::nullopt;
  }();
  if (fallback) { curl.setopt(CURLOPT_CAINFO, fallback->c_str()); }
}

}  // namespace kvikio::detail
