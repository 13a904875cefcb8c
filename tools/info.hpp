#pragma once
// `kvikio info`: version, what was found on this machine, and every setting with its source.

namespace kvikio::tool {

int run_info(int argc, char** argv, int first);

}  // namespace kvikio::tool
