#include "exec/train/lr_schedule.h"

#include <cmath>
#include <sstream>

#include "common/error.h"

namespace dtsim::exec {
namespace {

template <class T>
void Require(bool ok, const char* what, T value) {
  if (ok) return;
  std::ostringstream m;
  m << "learning-rate schedule: " << what << ", got " << value;
  throw UserError(m.str(), "fix the learning-rate options");
}

}  // namespace

LrSchedule::LrSchedule(LrScheduleOptions options) : options_(options) {
  Require(std::isfinite(options_.initial_lr) && options_.initial_lr >= 0,
          "initial_lr must be a finite number >= 0", options_.initial_lr);
  Require(options_.warmup_steps >= 0, "warmup_steps must be >= 0", options_.warmup_steps);
  if (options_.kind == LrScheduleKind::kExponential) {
    Require(std::isfinite(options_.decay_rate) && options_.decay_rate > 0,
            "decay_rate must be a finite number > 0", options_.decay_rate);
    Require(options_.decay_steps >= 1, "decay_steps must be >= 1", options_.decay_steps);
  }
}

double LrSchedule::At(std::int64_t step) const {
  DTSIM_CHECK(step >= 0, "LrSchedule::At needs step >= 0");
  const double warmup = step < options_.warmup_steps
                            ? static_cast<double>(step + 1) / static_cast<double>(options_.warmup_steps)
                            : 1.0;
  if (options_.kind == LrScheduleKind::kConstant) return warmup * options_.initial_lr;
  double exponent = options_.staircase
                        ? static_cast<double>(step / options_.decay_steps)
                        : static_cast<double>(step) / static_cast<double>(options_.decay_steps);
  return warmup * options_.initial_lr * std::pow(options_.decay_rate, exponent);
}

}  // namespace dtsim::exec
