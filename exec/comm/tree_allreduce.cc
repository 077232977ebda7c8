#include "exec/comm/tree_allreduce.h"

#include <algorithm>

#include "common/error.h"
#include "exec/comm/chunks.h"

namespace dtsim::exec {

TreeLinks HeapTreeLinks(int position, int size) {
  DTSIM_CHECK(position >= 0 && position < size, "tree position out of range");
  TreeLinks links;
  links.parent = position == 0 ? -1 : (position - 1) / 2;
  if (2 * position + 1 < size) links.left = 2 * position + 1;
  if (2 * position + 2 < size) links.right = 2 * position + 2;
  return links;
}

namespace {

// One of the two trees as seen from the calling rank: its neighbours as
// world ranks (-1 where absent), its half of the buffer and that half's
// chunks.
struct TreeView {
  int tag = 0;
  int parent = -1;
  int children[2] = {-1, -1};  // left, right
  ElementRange half;
  std::size_t chunks = 0;
  std::vector<SendRequest> up_sends;  // per chunk, to the parent

  ElementRange Chunk(std::size_t k) const {
    const ElementRange r = EvenPart(half.size(), chunks, k);
    return {half.begin + r.begin, half.begin + r.end};
  }
};

}  // namespace

void TreeAllReduceSum(Communicator& comm, float* data, std::size_t count,
                      const std::vector<int>& group, const TreeAllReduceOptions& options) {
  const auto me = std::lower_bound(group.begin(), group.end(), comm.rank());
  DTSIM_CHECK(me != group.end() && *me == comm.rank(), "tree group must contain the caller");
  DTSIM_CHECK(options.chunk_bytes >= sizeof(float), "tree chunk must hold at least one float");
  const int n = static_cast<int>(group.size());
  if (n <= 1 || count == 0) return;
  DTSIM_CHECK(data != nullptr, "null buffer with a non-zero count");
  const int p = static_cast<int>(me - group.begin());
  const std::size_t chunk_elems = options.chunk_bytes / sizeof(float);

  // Tree A: tree position = group position. Tree B: tree position i is group
  // position n-1-i. Tree A takes the first (count+1)/2 elements.
  const std::size_t split = (count + 1) / 2;
  TreeView trees[2];
  for (int t = 0; t < 2; ++t) {
    TreeView& tree = trees[t];
    const auto to_world = [&](int tree_position) {
      if (tree_position < 0) return -1;
      return group[static_cast<std::size_t>(t == 0 ? tree_position : n - 1 - tree_position)];
    };
    const TreeLinks links = HeapTreeLinks(t == 0 ? p : n - 1 - p, n);
    tree.tag = t == 0 ? kTreeAllReduceTagA : kTreeAllReduceTagB;
    tree.parent = to_world(links.parent);
    tree.children[0] = to_world(links.left);
    tree.children[1] = to_world(links.right);
    tree.half = t == 0 ? ElementRange{0, split} : ElementRange{split, count};
    // ceil(half / chunk), at least 1, as sim::TreeAllReduce.
    tree.chunks = std::max<std::size_t>(1, (tree.half.size() + chunk_elems - 1) / chunk_elems);
    tree.up_sends.resize(tree.chunks);
  }
  const std::size_t rounds = std::max(trees[0].chunks, trees[1].chunks);

  // Reduce up: own + left + right, in that order, then on to the parent.
  std::vector<float> incoming(std::min(count, chunk_elems));
  for (std::size_t k = 0; k < rounds; ++k) {
    for (TreeView& tree : trees) {
      if (k >= tree.chunks) continue;
      const ElementRange chunk = tree.Chunk(k);
      if (chunk.size() == 0) continue;
      float* mine = data + chunk.begin;
      for (int child : tree.children) {
        if (child < 0) continue;
        comm.Recv(child, tree.tag, incoming.data(), chunk.size());
        for (std::size_t i = 0; i < chunk.size(); ++i) mine[i] += incoming[i];
      }
      if (tree.parent >= 0)
        tree.up_sends[k] = comm.Isend(tree.parent, tree.tag, mine, chunk.size());
    }
  }
  // Broadcast down from the roots, chunk by chunk in the same order.
  std::vector<SendRequest> down_sends;
  for (std::size_t k = 0; k < rounds; ++k) {
    for (TreeView& tree : trees) {
      if (k >= tree.chunks) continue;
      const ElementRange chunk = tree.Chunk(k);
      if (chunk.size() == 0) continue;
      float* mine = data + chunk.begin;
      if (tree.parent >= 0) {
        tree.up_sends[k].Wait();  // the chunk is about to be overwritten
        comm.Recv(tree.parent, tree.tag, mine, chunk.size());
      }
      for (int child : tree.children)
        if (child >= 0) down_sends.push_back(comm.Isend(child, tree.tag, mine, chunk.size()));
    }
  }
  for (SendRequest& s : down_sends) s.Wait();
}

}  // namespace dtsim::exec
