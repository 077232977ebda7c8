// The heap of a simulating command, backed by transparent huge pages.
//
// A `dtsim run` of a large cluster builds a plan of tens of thousands of tasks
// and an engine state beside it: a few MiB touched once each. On a virtual
// machine every first touch of a 4 KiB page is a trap to the hypervisor;
// on the 2-core development VM, 2,000 of them were half of the 1,024-GPU
// run's 49 ms. Backing the heap with 2 MiB pages makes those one fault each.
#pragma once

#include <cstddef>

namespace dtsim::tools {

// Grows the heap by `bytes` up front and asks the kernel (madvise
// MADV_HUGEPAGE) to back it with transparent huge pages; allocations below
// `bytes` then come from that heap instead of their own mappings. Call once,
// early, in a command that only simulates (not in MPI ranks, whose libraries
// watch the heap). Does nothing where glibc or Linux are absent, or where the
// kernel refuses: a hint, never an error.
void BackHeapWithHugePages(std::size_t bytes);

}  // namespace dtsim::tools
