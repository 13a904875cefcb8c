#include "core/task_split.hpp"

#include <algorithm>

namespace kvikio::detail {

std::vector<TaskRange> split_into_tasks(std::size_t size,
                                        std::size_t file_offset,
                                        std::size_t task_size)
{
  std::vector<TaskRange> tasks;
  if (size == 0) { return tasks; }
  tasks.reserve(size / task_size + 2);
  const std::size_t end = file_offset + size;
  std::size_t begin     = file_offset;
  while (begin < end) {
    std::size_t stop = std::min(end, begin + task_size);
    if (task_size >= page_size && stop < end) {
      // Pull the boundary back to a page so the next piece starts aligned.
      std::size_t aligned = stop / page_size * page_size;
      if (aligned > begin) { stop = aligned; }
    }
    tasks.push_back({begin - file_offset, begin, stop - begin});
    begin = stop;
  }
  return tasks;
}

}  // namespace kvikio::detail
