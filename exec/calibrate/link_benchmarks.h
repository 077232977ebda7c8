// Point-to-point benchmark between two ranks of a Communicator (MPI
// processes): ping-pong of one message size. Rank 0 sends and waits for the
// echo; rank 1 echoes. The one-way time of a message is half a round trip,
// as in the OSU and Intel MPI benchmarks' PingPong.
#pragma once

#include <cstdint>

#include "config/device_profile.h"
#include "exec/calibrate/timing.h"
#include "exec/comm/communicator.h"

namespace dtsim::exec {

// Collective over the Communicator: every rank calls it with the same
// arguments; ranks other than 0 and 1 only take part in the barrier first.
// One run is `round_trips` round trips of a `bytes`-byte message (floats;
// bytes is rounded up to a multiple of 4). Group "ping_pong", name "<bytes>B";
// `bytes` is the message size and `seconds` the one-way time (half a round
// trip). The result is meaningful on rank 0 (rank 1 times its own side).
// REQUIRES: comm.size() >= 2, bytes >= 1, round_trips >= 1 (DTSIM_CHECK).
config::ProfileMeasurement MeasurePingPong(Communicator& comm, std::int64_t bytes,
                                           int round_trips, const TimingOptions& timing);

}  // namespace dtsim::exec
