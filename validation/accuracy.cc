#include "validation/accuracy.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace dtsim::validation {

double PercentError(double predicted, double measured) {
  DTSIM_CHECK(measured > 0, "a measurement is > 0");
  return (predicted - measured) / measured * 100;
}

double AbsPercentError(double predicted, double measured) {
  return std::abs(PercentError(predicted, measured));
}

ErrorSummary SummarizeErrors(const std::vector<double>& signed_errors, int failed) {
  ErrorSummary s;
  s.predicted = static_cast<int>(signed_errors.size());
  s.failed = failed;
  s.runs = s.predicted + failed;
  if (signed_errors.empty()) return s;
  std::vector<double> abs;
  double sum_abs = 0, sum_signed = 0;
  for (double e : signed_errors) {
    abs.push_back(std::abs(e));
    sum_abs += std::abs(e);
    sum_signed += e;
  }
  std::sort(abs.begin(), abs.end());
  const std::size_t n = abs.size();
  s.mean_ape = sum_abs / static_cast<double>(n);
  s.mean_signed_pe = sum_signed / static_cast<double>(n);
  s.max_ape = abs.back();
  s.median_ape = n % 2 == 1 ? abs[n / 2] : (abs[n / 2 - 1] + abs[n / 2]) / 2;
  return s;
}

}  // namespace dtsim::validation
