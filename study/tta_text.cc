#include "study/tta_text.h"

#include <cstdio>

namespace dtsim::study {

std::string Shortest(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

std::string Fixed(double v, int digits) {
  char s[64];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}

std::string Seconds(double s) {
  char text[32];
  if (s >= 1) {
    std::snprintf(text, sizeof text, "%.3g s", s);
  } else if (s >= 1e-3) {
    std::snprintf(text, sizeof text, "%.3g ms", s * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.3g us", s * 1e6);
  }
  return text;
}

std::string RuleText(const exec::OptimizerOptions& r) {
  std::string t = exec::OptimizerAlgorithmName(r.algorithm);
  if (r.algorithm == exec::OptimizerAlgorithm::kMomentum) {
    t += ' ';
    t += Shortest(r.momentum);
  }
  if (r.lr.warmup_steps > 0) t += ", warm-up " + std::to_string(r.lr.warmup_steps) + " steps";
  if (r.lr.kind == exec::LrScheduleKind::kExponential) {
    t += ", decay x";
    t += Shortest(r.lr.decay_rate);
    t += " every " + std::to_string(r.lr.decay_steps) + " steps";
    t += r.lr.staircase ? " (staircase)" : " (smooth)";
  }
  return t;
}

}  // namespace dtsim::study
