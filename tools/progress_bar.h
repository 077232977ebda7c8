// A progress bar on one line of stderr for long commands.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace dtsim::tools {

// "[=====>     ] 120/200 rows, 1.2 s" on one line of `err`, redrawn in
// place. Shown from the start on a terminal, otherwise once the command has
// run for a second (so quick runs in scripts stay silent); off a terminal
// (a log file) it is redrawn once a second and at the end. Not thread-safe:
// call Update from one thread.
class ProgressBar {
 public:
  // `unit`: what is counted, plural ("rows").
  ProgressBar(std::ostream& err, bool terminal, std::string unit);

  void Update(int done, int total);
  // Ends the bar's line, if it was shown.
  void Finish();
  // Seconds since construction.
  double Elapsed() const;

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr double kDelay = 1.0;  // seconds before a bar off a terminal
  std::ostream& err_;
  bool terminal_;
  std::string unit_;
  bool shown_ = false;
  double last_ = 0;  // elapsed seconds at the last redraw
  Clock::time_point start_ = Clock::now();
};

}  // namespace dtsim::tools
