#pragma once

/// Marks a declaration as part of libkvikio's ABI. The library is built with hidden
/// visibility, so only the classes and functions that carry this macro are exported;
/// everything else stays internal and free to change.
#define KVIKIO_EXPORT __attribute__((visibility("default")))
