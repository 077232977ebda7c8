// Learning-rate schedules, as TensorFlow 1.x defines them:
//   constant:     lr(step) = initial_lr
//   exponential:  lr(step) = initial_lr * decay_rate ^ (step / decay_steps)
//                 (tf.train.exponential_decay); with staircase the exponent
//                 is floor(step / decay_steps), so the rate drops in steps.
// Either may start with a linear warm-up (Goyal et al. 2017, "Accurate,
// Large Minibatch SGD", section 2.2, gradual warm-up): for step <
// warmup_steps the rate is the schedule's rate times (step + 1) /
// warmup_steps, so it climbs from 1/warmup_steps of it to all of it; the
// decay counts steps from 0, warm-up included.
// Values are computed in double; TensorFlow computes in the learning rate's
// dtype (usually float32), so it may differ in the last float bits.
#pragma once

#include <cstdint>

namespace dtsim::exec {

enum class LrScheduleKind {
  kConstant,
  kExponential,
};

// The defaults of the decay fields are the CIFAR-10 tutorial's
// (tensorflow/models tutorials/image/cifar10/cifar10.py): decay by 0.1 every
// 350 epochs of 50000 images at batch 128, in steps.
struct LrScheduleOptions {
  // Default kConstant: decay_* and staircase are then ignored.
  LrScheduleKind kind = LrScheduleKind::kConstant;
  // Learning rate at step 0, >= 0 and finite. Default 0.1.
  double initial_lr = 0.1;
  // Factor applied per decay_steps steps, > 0 and finite (< 1 decays,
  // > 1 grows). Default 0.1.
  double decay_rate = 0.1;
  // Steps per factor of decay_rate, >= 1. Default 136718 =
  // floor(50000 / 128 * 350).
  std::int64_t decay_steps = 136718;
  // true: exponent floor(step / decay_steps); false: step / decay_steps as a
  // real number. Default true.
  bool staircase = true;
  // Steps of linear warm-up, >= 0 (0 = none). Applies to both kinds.
  std::int64_t warmup_steps = 0;
};

class LrSchedule {
 public:
  // Throws UserError when an option is outside its documented range.
  explicit LrSchedule(LrScheduleOptions options);

  // The learning rate for optimizer step `step` (0-based).
  // REQUIRES: step >= 0.
  double At(std::int64_t step) const;

  const LrScheduleOptions& options() const { return options_; }

 private:
  LrScheduleOptions options_;
};

}  // namespace dtsim::exec
