#pragma once
// Splitting one request into the pieces that run in parallel: a pure function, kept apart
// from running them so that it can be tested alone.
#include <cstddef>
#include <vector>

#include "core/alignment.hpp"

namespace kvikio::detail {

/// One piece of a request: `size` bytes at `file_offset`, `buf_offset` into the buffer.
struct TaskRange {
  std::size_t buf_offset;
  std::size_t file_offset;
  std::size_t size;
  bool operator==(const TaskRange&) const = default;
};

/// Covers [file_offset, file_offset + size) with consecutive pieces of at most `task_size`
/// bytes (task_size > 0). When task_size is at least a page, every boundary between pieces
/// is page aligned in the file, so each piece's middle can use Direct IO; pieces are then
/// at most task_size and at least task_size - page_size long, except the first and last.
/// An empty request yields no pieces.
std::vector<TaskRange> split_into_tasks(std::size_t size,
                                        std::size_t file_offset,
                                        std::size_t task_size);

}  // namespace kvikio::detail
