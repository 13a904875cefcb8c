// library_status() and the availability queries of <kvikio/shim.hpp>: what the shims loaded
// and why not, gathered from every floor below.
#include <kvikio/shim.hpp>

#include "remote/curl_status.hpp"
#include "shim/cuda_api.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio {

std::vector<LibraryStatus> library_status()
{
  const auto& cuda = detail::CudaAPI::instance();
  auto& cufile     = detail::CufileAPI::instance();
  // Opening the driver is what decides whether AUTO uses cuFile, so report that outcome.
  const bool cufile_ok      = cufile.driver_open();
  std::string cufile_detail = cufile.reason();
  if (cufile_ok) {
    const int v = cufile.version();
    if (v > 0) {
      cufile_detail +=
        " (cuFile " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) + ")";
    }
    cufile_detail += std::string(", batch API ") + (cufile.batch_api() ? "yes" : "no") +
                     ", stream API " + (cufile.stream_api() ? "yes" : "no");
  }
  return {
    {"libcuda", cuda.path(), cuda.available(), cuda.reason()},
    {"libcufile", cufile.path(), cufile_ok, cufile_detail},
    {"libcurl", "libcurl.so.4", true, detail::libcurl_description()},
  };
}

bool is_cuda_driver_available() { return detail::CudaAPI::instance().available(); }
bool is_cufile_library_available() { return detail::CufileAPI::instance().library_loaded(); }
bool is_cufile_available() { return detail::cufile_driver_usable(); }
bool is_batch_api_available()
{
  return is_cufile_available() && detail::CufileAPI::instance().batch_api();
}
bool is_stream_api_available()
{
  return is_cufile_available() && detail::CufileAPI::instance().stream_api();
}
int cufile_version()
{
  auto& api = detail::CufileAPI::instance();
  return api.library_loaded() ? api.version() : 0;
}

}  // namespace kvikio
