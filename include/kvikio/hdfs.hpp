#pragma once
/// @file hdfs.hpp
/// The WebHDFS endpoint (Apache Hadoop's REST API over HTTP/HTTPS).
#include <optional>
#include <string>

#include <kvikio/export.hpp>
#include <kvikio/remote_handle.hpp>

namespace kvikio {

/// A file in HDFS read through WebHDFS: the size from op=GETFILESTATUS, ranges from
/// op=OPEN&offset=..&length=.., following the name node's redirect to a data node.
///
/// The user name (sent as user.name) is, in order: the `username` argument, the URL's
/// user.name query parameter, KVIKIO_WEBHDFS_USERNAME; none is sent if all are absent.
/// The URL's other query parameters (doas, delegation, ...) are sent with every request,
/// except op, offset and length, which each request sets. Messages show user.name and doas
/// (identities, needed to understand a 401 or 403) but not a delegation token.
/// The path must not have "." or ".." segments (it could leave /webhdfs/v1/).
class KVIKIO_EXPORT WebHdfsEndpoint : public RemoteEndpoint {
 public:
  /// `url` is "http(s)://host:port/webhdfs/v1/<path>[?user.name=..][&doas=..][&..]", or
  /// "http(s)://host:port/<path>" (the name node's file path), to which the /webhdfs/v1
  /// prefix is added.
  /// @throws std::invalid_argument naming the URL if it is not of that form or its path has a
  /// "." or ".." segment.
  explicit WebHdfsEndpoint(std::string url);
  /// The file `remote_file_path` on the name node `host`:`port` (http).
  WebHdfsEndpoint(std::string host,
                  std::string port,
                  std::string remote_file_path,
                  std::optional<std::string> username = std::nullopt);

  void setopt(CurlHandle& curl) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;
  void setup_range_request(CurlHandle& curl, std::size_t file_offset, std::size_t size) override;
  /// True for an http(s) URL whose path starts with /webhdfs/v1/.
  static bool is_url_valid(const std::string& url) noexcept;
  /// The URL of a request with the query `op_params` ("op=CREATE&overwrite=true"), the user
  /// name and the URL's other parameters (unredacted: it may hold a delegation token).
  [[nodiscard]] std::string op_url(const std::string& op_params) const
  {
    return request_url(op_params);
  }
  /// The user name requests are sent with, if any.
  [[nodiscard]] const std::optional<std::string>& username() const noexcept { return username_; }

 private:
  /// base_url_ with `op_params`, user.name and the URL's other parameters as its query.
  [[nodiscard]] std::string request_url(const std::string& op_params) const;
  std::string base_url_;  // without query
  std::optional<std::string> username_;
  std::string extra_query_;  // the URL's query parameters other than op/offset/length/user.name
};

}  // namespace kvikio
