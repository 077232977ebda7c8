// A scenario naming a device profile (cluster.device_profile) is priced with
// the profile's numbers: the roofline's closed form with the measured peak,
// efficiency, bandwidth and launch overhead.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "config/device_profile.h"
#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  ASSERT_TRUE(f.good()) << path;
}

// A profile with peak `peak_gflops`, 1000 GB/s memory, 1 us launch and a
// dense efficiency of 0.5.
std::string Profile(double peak_gflops) {
  config::DeviceProfile p;
  p.device = "test";
  p.peak_fp32_flop_per_s = peak_gflops * 1e9;
  p.memory_bw_bytes_per_s = 1000e9;
  p.kernel_launch_s = 1e-6;
  p.compute_efficiency[models::OpKind::kDense] = 0.5;
  p.provenance = config::ProfileProvenance{.date = "2025-01-31T12:00:00Z",
                                           .host = "testhost",
                                           .dtsim_version = "0.1.0",
                                           .backend = "cpu",
                                           .quick = false,
                                           .measurements = {}};
  return config::DeviceProfileYaml(p);
}

// Seconds of the forward task of op `name` on rank 0.
double ForwardSeconds(const Prediction& p, const std::string& name) {
  const models::OpId id = p.graph.Find(name);
  const std::vector<plan::Task>& tasks = p.plan.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const plan::Task& t = tasks[i];
    if (t.kind == plan::TaskKind::kForward && t.rank == 0 && t.op == static_cast<int>(id) &&
        t.op_count == 1) {
      return NsToSeconds(p.costs.task_ns[i]);
    }
  }
  ADD_FAILURE() << "no forward task of " << name;
  return 0;
}

TEST(DeviceProfileSim, DenseTimeFollowsTheProfilesPeak) {
  std::random_device random;
  std::string name = "dtsim_profile_sim_";
  name += std::to_string(random());
  name += std::to_string(random());
  const fs::path dir = fs::temp_directory_path() / name;
  fs::create_directories(dir);
  WriteFile(dir / "model.yaml",
            "name: one-dense\ninput: [2048]\nlayers:\n"
            "  - {name: fc, type: dense, out_features: 1000}\n"
            "  - {name: loss, type: softmax_xent}\n");
  WriteFile(dir / "slow.yaml", Profile(40));
  WriteFile(dir / "fast.yaml", Profile(80));
  const auto predict = [&](const char* profile) {
    std::string yaml = "cluster: {device_profile: ";
    yaml += profile;
    yaml += "}\nworkload: {model: {file: model.yaml}, batch_per_device: 64, iterations: 2}\n";
    return Simulate(config::ParseScenario(yaml, (dir / "s.yaml").string()));
  };
  const double slow = ForwardSeconds(predict("slow.yaml"), "fc");
  const double fast = ForwardSeconds(predict("fast.yaml"), "fc");
  fs::remove_all(dir);

  // fc on 64 samples: flops = 64 x (2 x 2048 x 1000 + 1000 bias adds)
  // = 262,208,000. Compute: flops / (peak x 0.5). Memory: (2,049,000 params
  // + 64 x (2048 + 1000) activations) x 4 B = 8,976,288 B at 1000 GB/s x
  // memory efficiency 1 (set by the profile) = 9.0 us, below compute. Plus
  // the profile's 1 us launch:
  //   40 GFLOP/s: 262,208,000 / 20e9 = 13.1104 ms, + 1 us = 13.1114 ms
  //   80 GFLOP/s: 262,208,000 / 40e9 =  6.5552 ms, + 1 us =  6.5562 ms
  EXPECT_NEAR(slow, 13.1114e-3, 1e-9);  // 1 ns: simulated time is whole ns
  EXPECT_NEAR(fast, 6.5562e-3, 1e-9);
  // Twice the peak, half the compute time.
  EXPECT_NEAR((slow - 1e-6) / (fast - 1e-6), 2.0, 1e-6);
}

}  // namespace
}  // namespace dtsim::sim
