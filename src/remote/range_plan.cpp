// The ranges of a remote batch (remote/range_plan.hpp).
#include "remote/range_plan.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace kvikio::detail {

RangePlan::RangePlan(std::size_t task_size, std::size_t gap)
  : task_size_(std::max(task_size, std::size_t{1})), gap_(gap)
{
}

void RangePlan::add(
  std::size_t index, char* buf, std::size_t size, std::size_t file_offset, const PointerInfo& info)
{
  bytes_ += size;
  for (std::size_t done = 0; done < size; done += task_size_) {
    const std::size_t n = std::min(task_size_, size - done);
    RangeTarget t{index, buf + done, file_offset + done, n};
    if (info.host_accessible()) {
      host_.push_back(t);
    } else {
      groups_.push_back(RangeGroup{index, t.file_offset, n, {t}, true, info});
    }
  }
}

std::vector<RangeGroup> RangePlan::finish()
{
  std::stable_sort(host_.begin(), host_.end(), [](const RangeTarget& a, const RangeTarget& b) {
    return a.file_offset < b.file_offset;
  });
  for (std::size_t k = 0; k < host_.size();) {
    RangeGroup g{host_[k].index, host_[k].file_offset, host_[k].size, {host_[k]}};
    std::size_t end = host_[k].file_offset + host_[k].size;
    for (++k; k < host_.size(); ++k) {
      const auto& t             = host_[k];
      const std::size_t new_end = std::max(end, t.file_offset + t.size);
      if (t.file_offset > end + gap_ || new_end - g.file_offset > task_size_) { break; }
      end           = new_end;
      g.first_index = std::min(g.first_index, t.index);
      g.targets.push_back(t);
    }
    g.size = end - g.file_offset;
    groups_.push_back(std::move(g));
  }
  host_.clear();
  return std::move(groups_);
}

void RangeScatter::operator()(const char* data, std::size_t n)
{
  const auto& t           = group->targets;
  const std::size_t begin = group->file_offset + pos;
  const std::size_t end   = begin + n;
  while (first < t.size() && t[first].file_offset + t[first].size <= begin) {
    ++first;
  }
  for (std::size_t k = first; k < t.size() && t[k].file_offset < end; ++k) {
    const std::size_t lo = std::max(begin, t[k].file_offset);
    const std::size_t hi = std::min(end, t[k].file_offset + t[k].size);
    if (lo < hi) { std::memcpy(t[k].dst + (lo - t[k].file_offset), data + (lo - begin), hi - lo); }
  }
  pos += n;
}

}  // namespace kvikio::detail
