// Softmax cross-entropy and the embedding lookup; both read integer data
// stored as floats (labels, token ids).
#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "exec/kernels/cpu_kernels.h"

namespace dtsim::exec::DTSIM_CPU_NS {
namespace {

// The integer held by `value`. REQUIRES: an integer in [0, limit).
template <typename T>
Index IntegerIn(T value, Index limit, const char* what) {
  DTSIM_CHECK(value >= T(0) && value < static_cast<T>(limit) && std::floor(value) == value,
              what);
  return static_cast<Index>(value);
}

// A bound for ids when the table's row count is unknown: floats hold
// integers exactly below 2^24.
constexpr Index kExactFloatIntegers = Index(1) << 24;

}  // namespace

template <typename T>
void SoftmaxCrossEntropyForward(Index rows, Index classes, const T* logits, const T* labels,
                                T* probs, T* loss) {
  DTSIM_CHECK(rows >= 0 && classes > 0, "SoftmaxCrossEntropyForward: bad shape");
  for (Index i = 0; i < rows; ++i) {
    const Index label = IntegerIn(labels[i], classes, "label outside [0, classes)");
    const T* in = logits + i * classes;
    T* out = probs + i * classes;
    const T max = *std::max_element(in, in + classes);
    T sum = 0;
    for (Index j = 0; j < classes; ++j) {
      out[j] = std::exp(in[j] - max);
      sum += out[j];
    }
    for (Index j = 0; j < classes; ++j) out[j] /= sum;
    // -log softmax(label) = logsumexp(logits) - logits[label], which stays
    // finite when the label's probability underflows.
    loss[i] = std::log(sum) + max - in[label];
  }
}

template <typename T>
void SoftmaxCrossEntropyBackward(Index rows, Index classes, const T* probs, const T* labels,
                                 T scale, T* dlogits) {
  DTSIM_CHECK(rows >= 0 && classes > 0, "SoftmaxCrossEntropyBackward: bad shape");
  if (dlogits == nullptr) return;
  for (Index i = 0; i < rows; ++i) {
    const Index label = IntegerIn(labels[i], classes, "label outside [0, classes)");
    const T* p = probs + i * classes;
    T* out = dlogits + i * classes;
    for (Index j = 0; j < classes; ++j) {
      out[j] += scale * (p[j] - (j == label ? T(1) : T(0)));
    }
  }
}

template <typename T>
void EmbeddingForward(Index count, Index hidden, const T* ids, const T* table, T* y) {
  DTSIM_CHECK(count >= 0 && hidden > 0, "EmbeddingForward: bad shape");
  for (Index i = 0; i < count; ++i) {
    const Index id = IntegerIn(ids[i], kExactFloatIntegers, "id is not a non-negative integer");
    std::copy_n(table + id * hidden, hidden, y + i * hidden);
  }
}

template <typename T>
void EmbeddingBackward(Index count, Index hidden, const T* ids, const T* dy, T* dtable) {
  DTSIM_CHECK(count >= 0 && hidden > 0, "EmbeddingBackward: bad shape");
  if (dtable == nullptr) return;
  for (Index i = 0; i < count; ++i) {
    const Index id = IntegerIn(ids[i], kExactFloatIntegers, "id is not a non-negative integer");
    T* row = dtable + id * hidden;
    const T* g = dy + i * hidden;
    for (Index j = 0; j < hidden; ++j) row[j] += g[j];
  }
}

#define DTSIM_INSTANTIATE(T)                                                               \
  template void SoftmaxCrossEntropyForward<T>(Index, Index, const T*, const T*, T*, T*);   \
  template void SoftmaxCrossEntropyBackward<T>(Index, Index, const T*, const T*, T, T*);   \
  template void EmbeddingForward<T>(Index, Index, const T*, const T*, T*);                 \
  template void EmbeddingBackward<T>(Index, Index, const T*, const T*, T*);
DTSIM_INSTANTIATE(float)
DTSIM_INSTANTIATE(double)
#undef DTSIM_INSTANTIATE

}  // namespace dtsim::exec::DTSIM_CPU_NS
