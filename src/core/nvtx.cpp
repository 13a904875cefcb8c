// Whether this build of libkvikio carries NVTX ranges (src/CMakeLists.txt: KVIKIO_USE_NVTX).
#include <kvikio/nvtx.hpp>

namespace kvikio {

bool is_nvtx_enabled() noexcept { return KVIKIO_NVTX_ENABLED == 1; }

}  // namespace kvikio
