#include "tools/heap_pages.h"

#include <cstdint>
#include <cstdlib>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace dtsim::tools {

void BackHeapWithHugePages(std::size_t bytes) {
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  // The size of a transparent huge page on x86-64 and arm64 with 4 KiB pages
  // (the kernel's HPAGE_PMD_SIZE; Documentation/admin-guide/mm/transhuge.rst).
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  const int size = static_cast<int>(bytes);
  // Blocks up to `bytes` come from the heap (glibc otherwise maps each block
  // over its dynamic threshold, 128 KiB at first, on its own), the heap grows
  // `bytes` at a time, and frees do not give its top back.
  if (mallopt(M_MMAP_THRESHOLD, size) == 0 || mallopt(M_TOP_PAD, size) == 0 ||
      mallopt(M_TRIM_THRESHOLD, 2 * size) == 0)
    return;
  // A block of half that size cannot come from the heap's free space at
  // start-up: the heap grows by it and the pad, and everything from the block
  // to the heap's end is then ours to advise.
  void* probe = std::malloc(bytes / 2);
  if (probe == nullptr) return;
  const auto begin = (reinterpret_cast<std::uintptr_t>(probe) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(::sbrk(0)) & ~(kHugePage - 1);
  if (end > begin)
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a hint: errors ignored
  std::free(probe);
#else
  (void)bytes;
#endif
}

}  // namespace dtsim::tools
