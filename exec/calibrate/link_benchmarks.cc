#include "exec/calibrate/link_benchmarks.h"

#include <string>
#include <vector>

#include "common/error.h"
#include "exec/counter_rng.h"

namespace dtsim::exec {

config::ProfileMeasurement MeasurePingPong(Communicator& comm, std::int64_t bytes,
                                           int round_trips, const TimingOptions& timing) {
  DTSIM_CHECK(comm.size() >= 2 && bytes >= 1 && round_trips >= 1, "bad ping-pong arguments");
  constexpr int kTag = 7;
  const auto count = static_cast<std::size_t>((bytes + 3) / 4);
  std::vector<float> message(count);
  for (std::size_t i = 0; i < count; ++i) message[i] = CounterUniform(5, i);
  const int rank = comm.rank();
  comm.Barrier();
  const Timing t = TimeMedian(
      [&] {
        for (int i = 0; i < round_trips; ++i) {
          if (rank == 0) {
            comm.Send(1, kTag, message.data(), count);
            comm.Recv(1, kTag, message.data(), count);
          } else if (rank == 1) {
            comm.Recv(0, kTag, message.data(), count);
            comm.Send(0, kTag, message.data(), count);
          }
        }
      },
      timing);
  config::ProfileMeasurement m;
  m.group = "ping_pong";
  m.name = std::to_string(count * 4) + "B";
  m.bytes = static_cast<double>(count * 4);
  m.seconds = t.median_s / round_trips / 2;
  m.repeats = t.repeats;
  return m;
}

}  // namespace dtsim::exec
