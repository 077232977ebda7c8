// The window a real run's step time is measured over (closed forms: the
// averaging steps of local SGD are global iterations h, 2h, ...).
#include "exec/runtime/measured_window.h"

#include <gtest/gtest.h>

namespace dtsim::exec {
namespace {

TEST(MeasuredWindow, AllButTheFirstWithoutAveraging) {
  const MeasuredWindow w = MeasuredIterations(20, 0, 1);
  EXPECT_EQ(w.from, 1);
  EXPECT_EQ(w.to, 20);
  EXPECT_FALSE(w.whole_rounds);
  EXPECT_EQ(MeasuredIterations(1, 0, 1).from, 0);  // one iteration: it is all there is
  EXPECT_EQ(MeasuredIterations(1, 0, 1).to, 1);
}

TEST(MeasuredWindow, WholeRoundsAfterTheFirstAveraging) {
  // h = 4, 20 iterations: averaging after iterations 4, 8, 12, 16, 20
  // (indices 3, 7, ...). Measured: indices 4..19, four rounds, four
  // averagings in 16 steps = 1/h.
  MeasuredWindow w = MeasuredIterations(20, 0, 4);
  EXPECT_TRUE(w.whole_rounds);
  EXPECT_EQ(w.from, 4);
  EXPECT_EQ(w.to, 20);
  // 18 iterations: 3 whole rounds after the first (indices 4..15).
  w = MeasuredIterations(18, 0, 4);
  EXPECT_EQ(w.from, 4);
  EXPECT_EQ(w.to, 16);
  // Resumed after global iteration 2: the first averaging is global
  // iteration 4, the run's index 1.
  w = MeasuredIterations(10, 2, 4);
  EXPECT_EQ(w.from, 2);
  EXPECT_EQ(w.to, 10);
}

TEST(MeasuredWindow, TooShortForARoundFallsBack) {
  // 6 iterations, h = 4: after the averaging at index 3 only 2 are left.
  const MeasuredWindow w = MeasuredIterations(6, 0, 4);
  EXPECT_FALSE(w.whole_rounds);
  EXPECT_EQ(w.from, 1);
  EXPECT_EQ(w.to, 6);
}

}  // namespace
}  // namespace dtsim::exec
