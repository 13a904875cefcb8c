#include "shim/availability.hpp"

namespace kvikio::detail {

// The cuFile shim is not part of the core yet: AUTO always resolves to POSIX.
bool cufile_usable() { return false; }

}  // namespace kvikio::detail
