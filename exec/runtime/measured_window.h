// Which iterations of a real run its step time is measured over.
#pragma once

namespace dtsim::exec {

struct MeasuredWindow {
  int from = 0, to = 0;       // indices [from, to) of the run's iterations
  bool whole_rounds = false;  // local SGD: whole averaging rounds after the first
};

// A run of `n` iterations that starts after global iteration
// `first_iteration` (0, or the step a resumed run resumed from): all but
// the first (warm-up; the only one when n = 1). With local SGD averaging
// after global iterations h, 2h, ... (h > 1): the whole averaging rounds
// after the first averaging, so that the window holds one averaging per h
// steps, as a prediction does, and the first averaging (the transport's
// warm-up: connections, first touch of its buffers) is left out, as the
// first iteration is otherwise; the plain window when no whole round is
// left. REQUIRES: n >= 0, first_iteration >= 0, h >= 1.
MeasuredWindow MeasuredIterations(int n, int first_iteration, int h);

}  // namespace dtsim::exec
