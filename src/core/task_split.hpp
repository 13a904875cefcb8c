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

/// The pieces of [file_offset, file_offset + size), computed on demand in O(1) each, so that
/// a request of any size and task_size needs O(1) memory to describe. Pieces are consecutive
/// and at most `task_size` bytes (task_size > 0). When task_size is at least a page, every
/// boundary between pieces is page aligned in the file, so each piece's middle can use
/// Direct IO; pieces are then at most task_size and at least task_size - page_size long,
/// except the first and last. An empty request has no pieces.
class TaskPieces {
 public:
  TaskPieces(std::size_t size, std::size_t file_offset, std::size_t task_size) noexcept;
  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  /// Piece `i` (i < count()).
  [[nodiscard]] TaskRange operator[](std::size_t i) const noexcept;

 private:
  std::size_t file_offset_;
  std::size_t end_;  // file_offset + size
  std::size_t task_size_;
  std::size_t first_stop_;  // where piece 0 ends (page aligned unless it is the last)
  std::size_t step_;        // length of every piece after the first except the last
  std::size_t count_{0};
};

/// All of TaskPieces(size, file_offset, task_size), in order.
std::vector<TaskRange> split_into_tasks(std::size_t size,
                                        std::size_t file_offset,
                                        std::size_t task_size);

}  // namespace kvikio::detail
