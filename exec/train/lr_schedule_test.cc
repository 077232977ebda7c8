#include "exec/train/lr_schedule.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace dtsim::exec {
namespace {

TEST(LrSchedule, ConstantIgnoresTheStep) {
  LrScheduleOptions o;
  o.initial_lr = 0.05;
  LrSchedule s(o);
  EXPECT_EQ(s.At(0), 0.05);
  EXPECT_EQ(s.At(1'000'000'000), 0.05);
}

TEST(LrSchedule, ExponentialMatchesTheClosedForm) {
  // lr0 = 0.1, rate = 0.5, decay_steps = 10, not staircase:
  //   step 0  -> 0.1 * 0.5^0   = 0.1
  //   step 10 -> 0.1 * 0.5^1   = 0.05
  //   step 5  -> 0.1 * 0.5^0.5 = 0.1 / sqrt(2) = 0.07071067811865475
  //   step 25 -> 0.1 * 0.5^2.5 = 0.1 / (4 sqrt(2)) = 0.017677669529663688
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kExponential;
  o.initial_lr = 0.1;
  o.decay_rate = 0.5;
  o.decay_steps = 10;
  o.staircase = false;
  LrSchedule s(o);
  EXPECT_DOUBLE_EQ(s.At(0), 0.1);
  EXPECT_DOUBLE_EQ(s.At(10), 0.05);
  EXPECT_DOUBLE_EQ(s.At(5), 0.07071067811865475);
  EXPECT_DOUBLE_EQ(s.At(25), 0.017677669529663688);
}

TEST(LrSchedule, StaircaseFloorsTheExponent) {
  // Same options with staircase: exponent floor(step / 10).
  //   steps 0..9 -> 0.1, 10..19 -> 0.05, 25 -> 0.1 * 0.5^2 = 0.025.
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kExponential;
  o.initial_lr = 0.1;
  o.decay_rate = 0.5;
  o.decay_steps = 10;
  o.staircase = true;
  LrSchedule s(o);
  EXPECT_DOUBLE_EQ(s.At(0), 0.1);
  EXPECT_DOUBLE_EQ(s.At(9), 0.1);
  EXPECT_DOUBLE_EQ(s.At(10), 0.05);
  EXPECT_DOUBLE_EQ(s.At(19), 0.05);
  EXPECT_DOUBLE_EQ(s.At(25), 0.025);
}

TEST(LrSchedule, DefaultsAreTheCifar10Tutorials) {
  // cifar10.py: INITIAL_LEARNING_RATE 0.1, LEARNING_RATE_DECAY_FACTOR 0.1,
  // decay every floor(50000 / 128 * 350) = 136718 steps, staircase.
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kExponential;
  LrSchedule s(o);
  EXPECT_DOUBLE_EQ(s.At(136717), 0.1);
  EXPECT_DOUBLE_EQ(s.At(136718), 0.1 * 0.1);
  EXPECT_DOUBLE_EQ(s.At(2 * 136718), 0.1 * 0.1 * 0.1);
}

TEST(LrSchedule, InvalidOptionsAreUserErrors) {
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kExponential;
  o.decay_steps = 0;
  try {
    LrSchedule s(o);
    FAIL() << "decay_steps = 0 accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("decay_steps must be >= 1, got 0"), std::string::npos)
        << e.what();
  }
  o.decay_steps = 10;
  o.decay_rate = -1;
  EXPECT_THROW(LrSchedule{o}, UserError);
  o.decay_rate = 0.5;
  o.initial_lr = -0.1;
  EXPECT_THROW(LrSchedule{o}, UserError);
}

TEST(LrSchedule, WarmupClimbsLinearlyThenFollowsTheDecay) {
  // Goyal et al. 2017, section 2.2: the rate rises linearly to its target;
  // here (step + 1) / warmup_steps of it, so step 3 of 4 reaches it.
  LrScheduleOptions o;
  o.initial_lr = 0.4;
  o.warmup_steps = 4;
  LrSchedule constant(o);
  EXPECT_DOUBLE_EQ(constant.At(0), 0.1);
  EXPECT_DOUBLE_EQ(constant.At(1), 0.2);
  EXPECT_DOUBLE_EQ(constant.At(3), 0.4);
  EXPECT_DOUBLE_EQ(constant.At(100), 0.4);
  // With a staircase decay of 0.5 every 2 steps, warm-up multiplies it:
  // step 1 = 0.4 x 2/4 x 0.5^0, step 2 = 0.4 x 3/4 x 0.5^1, step 5 = 0.4 x 0.5^2.
  o.kind = LrScheduleKind::kExponential;
  o.decay_rate = 0.5;
  o.decay_steps = 2;
  LrSchedule decay(o);
  EXPECT_DOUBLE_EQ(decay.At(1), 0.2);
  EXPECT_DOUBLE_EQ(decay.At(2), 0.15);
  EXPECT_DOUBLE_EQ(decay.At(5), 0.1);
  o.warmup_steps = -1;
  EXPECT_THROW(LrSchedule{o}, UserError);
}

}  // namespace
}  // namespace dtsim::exec
