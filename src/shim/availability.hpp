#pragma once
// Whether the vendor libraries could be loaded, and why not: a result, not an exception.
#include <string>

namespace kvikio::detail {

/// True when libcufile loaded and its driver opened, so AUTO resolves to cuFile.
bool cufile_usable();

}  // namespace kvikio::detail
