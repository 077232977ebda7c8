#include "exec/runtime/measured_window.h"

#include "common/error.h"

namespace dtsim::exec {

MeasuredWindow MeasuredIterations(int n, int first_iteration, int h) {
  DTSIM_CHECK(n >= 0 && first_iteration >= 0 && h >= 1, "bad measured window arguments");
  MeasuredWindow w;
  w.from = n > 1 ? 1 : 0;
  w.to = n;
  for (int i = 0; h > 1 && i < n; ++i) {
    if ((first_iteration + i + 1) % h != 0) continue;  // not an averaging step
    const int rounds = (n - (i + 1)) / h;
    if (rounds >= 1) {
      w.from = i + 1;
      w.to = w.from + rounds * h;
      w.whole_rounds = true;
    }
    break;
  }
  return w;
}

}  // namespace dtsim::exec
