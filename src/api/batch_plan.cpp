// The layout of a batch of file requests (api/batch_plan.hpp).
#include "api/batch_plan.hpp"

#include <unistd.h>

#include <atomic>

namespace kvikio::detail {

std::vector<PoolGroup> plan_pool_groups(const std::vector<PieceShape>& shapes,
                                        std::size_t threads,
                                        std::size_t buffer_size)
{
  std::size_t staged_bytes = 0;
  for (const auto& p : shapes) {
    if (p.stageable) { staged_bytes += p.size; }
  }
  const std::size_t shares = threads <= 1 ? 1 : threads * 4;
  const std::size_t target =
    std::min(std::max(staged_bytes / shares, BatchPolicy::min_group), buffer_size);
  std::vector<PoolGroup> groups;
  for (std::size_t i = 0; i < shapes.size();) {
    if (!shapes[i].stageable) {
      groups.push_back({i, i + 1, false});
      ++i;
      continue;
    }
    const CUcontext ctx = shapes[i].context;
    std::size_t end     = i + 1;
    std::size_t filled  = shapes[i].size;
    while (end < shapes.size() && shapes[end].stageable && shapes[end].context == ctx &&
           shapes[end].size <= target - std::min(target, filled)) {
      filled += shapes[end].size;
      ++end;
    }
    groups.push_back({i, end, true});
    i = end;
  }
  return groups;
}

const MappingQuery* this_process_mapping_query()
{
  // One query per process, asked whether the kernel answers once; its descriptor stays open.
  // A forked child gets its own: the parent's names /proc/<parent>/maps. The parent's object
  // is left as it is in the child (other threads of the parent may have been using it).
  struct ForProcess {
    pid_t pid;
    MappingQuery query;
  };
  static std::atomic<ForProcess*> current{nullptr};
  const pid_t pid = ::getpid();
  auto* known     = current.load(std::memory_order_acquire);
  while (known == nullptr || known->pid != pid) {
    // No lock: a child forked while another thread held one would wait for it forever.
    auto* made = new ForProcess{pid, {}};  // kept for the life of the process
    if (current.compare_exchange_strong(known, made, std::memory_order_acq_rel)) {
      known = made;
    } else {
      delete made;  // another thread of this process was first: `known` is its
    }
  }
  return known->query.available() ? &known->query : nullptr;
}

}  // namespace kvikio::detail
