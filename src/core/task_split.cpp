#include "core/task_split.hpp"

namespace kvikio::detail {

namespace {
/// Pieces of `step` bytes over `rest` bytes, the last one taking up to task_size.
std::size_t pieces_after_first(std::size_t rest, std::size_t step, std::size_t task_size)
{
  if (rest == 0) { return 0; }
  if (rest <= task_size) { return 1; }
  return (rest - task_size + step - 1) / step + 1;
}
}  // namespace

// A piece that would end before the end of the request ends at a page boundary instead (when
// task_size allows one), so the next piece starts aligned; from then on every piece but the
// last is task_size rounded down to pages, and the last takes what is left (<= task_size).
TaskPieces::TaskPieces(std::size_t size, std::size_t file_offset, std::size_t task_size) noexcept
  : file_offset_(file_offset),
    end_(file_offset + size),
    task_size_(task_size),
    first_stop_(file_offset + size),
    step_(task_size >= page_size ? task_size / page_size * page_size : task_size)
{
  if (size == 0 || task_size == 0) { return; }
  if (size > task_size) {
    const std::size_t stop = file_offset + task_size;
    first_stop_            = task_size >= page_size ? stop / page_size * page_size : stop;
  }
  count_ = 1 + pieces_after_first(end_ - first_stop_, step_, task_size_);
}

TaskRange TaskPieces::operator[](std::size_t i) const noexcept
{
  if (i == 0) { return {0, file_offset_, first_stop_ - file_offset_}; }
  const std::size_t begin = first_stop_ + (i - 1) * step_;
  const std::size_t left  = end_ - begin;
  return {begin - file_offset_, begin, left <= task_size_ ? left : step_};
}

std::vector<TaskRange> split_into_tasks(std::size_t size,
                                        std::size_t file_offset,
                                        std::size_t task_size)
{
  const TaskPieces pieces(size, file_offset, task_size);
  std::vector<TaskRange> tasks;
  tasks.reserve(pieces.count());
  for (std::size_t i = 0; i < pieces.count(); ++i) {
    tasks.push_back(pieces[i]);
  }
  return tasks;
}

}  // namespace kvikio::detail
