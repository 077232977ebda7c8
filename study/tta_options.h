// What a time-to-accuracy study is asked (`dtsim tta`'s options), and how
// it prices a point as `dtsim exec` would run it on this machine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/scenario.h"

namespace dtsim::study {

// Bounds of the options (refused with exit status 2 beyond): proxies
// converge in 10^2 to 10^4 updates; every worker is an in-process replica
// of the proxy; seeds give a Student band that stops narrowing long before
// 100.
constexpr std::int64_t kMaxTtaSteps = 10'000'000;
constexpr int kMaxTtaWorkers = 4096;
constexpr int kMaxTtaSeeds = 100;
constexpr std::int64_t kMaxTtaBatch = 65536;
constexpr std::int64_t kMaxTtaEvalSamples = 1'000'000;  // per evaluation
// The memory the proxy runs held at once may take (replicas' parameters,
// gradients and momentum, and their saved activations), and the proxy
// training work a study may ask for (about a day on one core).
constexpr double kMaxTtaMemoryBytes = 8.0 * (1ull << 30);
constexpr double kMaxTtaFlops = 1e16;

struct TtaOptions {
  std::string proxy;  // zoo model or model file trained for real; "" = the scenario's
  // The proxy's data (exec::MakeDataset with each seed): a dtsim binary
  // dataset file, or an IDX folder whose training split it trains on and
  // whose test split (exec::MakeEvalDataset) it evaluates on; "" = a
  // synthetic set. Without a test split the held-out samples are the set's
  // last.
  std::string dataset;
  std::int64_t batch = 0;    // samples per worker per update; 0 = the scenario's batch_per_device
  std::vector<int> workers;  // worker counts measured; empty = each point's own
  std::int64_t steps = 300;  // updates per run at most
  int eval_every = 10;       // updates between evaluations
  std::int64_t eval_samples = 256;
  int seeds = 3;
  // The target, at most one of (0 = not given; none given = target 0.6):
  double target = 0;                  // held-out loss as a fraction of the initial one, in (0, 1]
  double target_loss = 0;             // held-out loss, > 0
  double target_accuracy = 0;         // held-out top-1 accuracy, in (0, 1]; a classification model
  double lr = 0.05;                   // for one worker's batch; scaled by lr_scaling
  std::string lr_scaling = "linear";  // linear, sqrt or none (of samples per update / batch)
  // Rates tried per setting (every seed at each); the one with the fewest
  // mean updates to the target is kept (a rate some seed never brings to
  // it loses; ties: the smaller). Non-empty: lr and lr_scaling are unused.
  std::vector<double> lr_grid;
  // The update rule, as `dtsim exec` applies it (exec/runtime/optimizer.h):
  std::string optimizer;  // sgd, momentum or adam; "" = the scenario's parallelism.optimizer
  double momentum = 0.9;  // momentum's coefficient (exec's default)
  std::int64_t lr_warmup_steps = 0;  // linear warm-up steps; 0 = none
  double lr_decay_rate = 0;          // exponential decay per lr_decay_steps; 0 = none
  std::int64_t lr_decay_steps = 0;
  bool lr_smooth = false;  // decay continuously instead of in steps
  int jobs = 0;            // runs at once; 0 = one per core
  bool quiet = false;      // no estimate or progress lines on the error stream
};

// Makes `s` predict `dtsim exec` running it with `processes` ranks on this
// machine (the command line knows how: tools/local_run.h); empty = the
// scenario's own cluster prices the updates.
using LocalRun = std::function<void(int processes, config::Scenario* s)>;

}  // namespace dtsim::study
