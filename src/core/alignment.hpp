#pragma once
// The page size that Direct IO aligns to, and the arithmetic on it.
#include <cstddef>
#include <cstdint>

namespace kvikio::detail {

/// O_DIRECT transfers need file offsets, sizes and buffer addresses aligned to the logical
/// block size; 4 KiB covers every block device we meet.
inline constexpr std::size_t page_size = 4096;

[[nodiscard]] constexpr std::size_t align_down(std::size_t n) noexcept
{
  return n / page_size * page_size;
}
[[nodiscard]] constexpr std::size_t align_up(std::size_t n) noexcept
{
  return (n + page_size - 1) / page_size * page_size;
}
[[nodiscard]] inline bool is_page_aligned(const void* p) noexcept
{
  return reinterpret_cast<std::uintptr_t>(p) % page_size == 0;
}

}  // namespace kvikio::detail
