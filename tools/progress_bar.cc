#include "tools/progress_bar.h"

#include <cstdio>
#include <utility>

namespace dtsim::tools {

ProgressBar::ProgressBar(std::ostream& err, bool terminal, std::string unit)
    : err_(err), terminal_(terminal), unit_(std::move(unit)) {}

void ProgressBar::Update(int done, int total) {
  const double elapsed = Elapsed();
  if (!shown_ && !terminal_ && elapsed < kDelay) return;
  if (!terminal_ && shown_ && done < total && elapsed < last_ + kDelay) return;
  shown_ = true;
  last_ = elapsed;
  constexpr int kWidth = 30;
  const int filled = total > 0 ? done * kWidth / total : kWidth;
  std::string bar(static_cast<std::size_t>(kWidth), ' ');
  for (int i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (filled < kWidth) bar[static_cast<std::size_t>(filled)] = '>';
  char line[160];
  std::snprintf(line, sizeof line, "\r[%s] %d/%d %s, %.1f s", bar.c_str(), done, total,
                unit_.c_str(), elapsed);
  err_ << line << std::flush;
}

void ProgressBar::Finish() {
  if (shown_) err_ << "\n";
}

double ProgressBar::Elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

}  // namespace dtsim::tools
