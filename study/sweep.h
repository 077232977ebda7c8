// Sweeps: one scenario file, many simulations.
//
// Any scalar of a scenario file may be given as a list; each such list is an
// axis and the sweep simulates the cartesian product of the axes:
//
//   cluster:
//     nodes: [1, 2, 4, 8]                   # axis 1 (4 values)
//   parallelism:
//     averaging_period: [1, 10, 50]         # axis 2 (3 values) -> 12 points
//
// The rule: a YAML sequence of scalars is an axis, except at the keys whose
// value is itself a list of scalars (kListValuedKeys in sweep.cc:
// stragglers.slow_devices[i].ranks, stragglers.interference.ranks,
// parallelism.stage_layers, simgrid.config, workload.framework.fused); to
// sweep one of those give a list of lists (`ranks: [[0], [0, 1]]`). Lists of
// mappings (cluster.devices, cluster.links, stragglers.slow_devices) are
// never axes, but their elements may hold axes (`cluster.devices[0].fp32`).
//
// Points are in a fixed order, first axis (in file order) slowest. Each
// point's document is the original one with every axis list replaced by the
// chosen element node, read by the normal scenario loader: errors name the
// file, line and column of that element.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/scenario.h"

namespace dtsim::study {

// One step from a node to a child: a mapping key or a sequence index.
using YamlStep = std::variant<std::string, std::size_t>;

// One list of a scenario file that gives the values to sweep.
struct SweepAxis {
  std::string path;                 // "cluster.nodes", "cluster.devices[0].fp32"
  std::vector<std::string> values;  // elements as written: "4", "25GbE", "[0, 1]"
  bool numeric = false;             // every value is a plain number ("4", "0.5", "1e3")
  std::vector<YamlStep> location;   // steps from the document root to the list
};

// One simulation of the sweep.
struct SweepPoint {
  // "<scenario>/<axis>=<value>,..." with the axes' full paths, e.g.
  // "sweep/cluster.nodes=4,parallelism.averaging_period=10"; "<scenario>"
  // alone when the file has no axis.
  std::string name;
  std::vector<std::size_t> choice;  // index into each axis's values
  config::Scenario scenario;        // as loaded; its name is the scenario's
  // Not "" when the point is well formed but its plan cannot be built
  // (InfeasiblePlan while loading, e.g. 5 pipeline stages on 8 devices):
  // the error message, with its file:line:column. `scenario` is then
  // default-constructed and the point is reported as an infeasible row.
  std::string infeasible;
  // Per axis: the point's strategy does not use it (its sweep.csv cell is
  // empty; study/sweep_unused.h). Empty = every axis is used.
  std::vector<bool> unused_axes;
};

struct Sweep {
  std::string name;                // the scenario's name (of the first point)
  std::string out_dir;             // its outputs.dir (default results/<name>)
  std::vector<SweepAxis> axes;     // in file order
  std::vector<SweepPoint> points;  // the cartesian product, first axis slowest
};

// The axes of a parsed scenario document, in file order. Throws UserError
// (at `filename`:line:column) for a key repeated in one mapping.
std::vector<SweepAxis> FindSweepAxes(const YAML::Node& root, const std::string& filename = "");

// Expands a scenario file into its points and loads each with
// config::ParseScenarioNode, `jobs` points at a time (0 = one per core).
// Throws UserError at file:line:column for the first point (in order) that
// does not load, and for sweeps of more than a million points. A point that
// loads but asks for an infeasible plan (InfeasiblePlan) does not stop the
// sweep: it is kept with SweepPoint::infeasible set. A point that repeats
// another because its strategy does not use an axis is left out, and a key
// no point uses is a UserError at the key (study/sweep_unused.h).
Sweep ParseSweep(const std::string& yaml_text, const std::string& filename, int jobs = 0);
// Same from a file; a missing file is reported as config::LoadScenario does.
Sweep LoadSweep(const std::string& path, int jobs = 0);

// What a sweep keeps of each point's prediction.
struct PointResult {
  std::string csv_row;  // the point's row of sweep.csv (SweepCsvHeader's columns)
  // False when the plan cannot run: it does not fit in memory, or the point
  // asks for a split that does not divide (the figures below are then 0 and
  // the row's timing columns empty).
  bool feasible = true;
  std::string infeasible;  // why, when !feasible
  double memory_per_device_bytes = 0;  // the largest device footprint (0 if unknown)
  int devices = 0;
  double throughput_samples_per_s = 0;
  double step_time_s = 0;
  double scaling_efficiency = 0;
  double compute_s = 0;       // per step, mean over devices
  double exposed_comm_s = 0;  // per step, mean over devices
  double idle_s = 0;          // per step, mean over devices
  double mfu = 0;             // model FLOPs utilization (sim/report.h ModelFigures)
  // The figures come from the pipelines' fast path (SimulateOptions::fast:
  // extrapolated from fewer micro-batches), not from a full simulation.
  bool extrapolated = false;
};

struct SweepRunOptions {
  // Worker threads; 0 = std::thread::hardware_concurrency(). Results do not
  // depend on it.
  int jobs = 0;
  // Called on the calling thread with (points done, points in all) about
  // every progress_interval_s while the sweep runs and once at the end.
  // Empty: no calls.
  std::function<void(int done, int total)> progress;
  double progress_interval_s = 0.1;
  // Sweeps over several processes (MPI ranks): this process simulates the
  // points i with i % shards == shard; the others' results are left
  // default-constructed, to be filled in from their processes.
  int shard = 0;
  int shards = 1;
  // SimulateOptions::fast for every point: the shortcuts that give the full
  // simulation's figures at less cost. False: every point in full.
  bool fast = true;
  // Simulate only these points (indices, in any order); empty = all. The
  // others' results are left default-constructed.
  std::vector<std::size_t> only;
};

// Simulates every point, `jobs` at a time. Each distinct (model, precision)
// graph is built once and shared by the points that train it. A point whose
// plan is infeasible (SweepPoint::infeasible, InfeasiblePlan from the
// simulation, or a plan that does not fit in memory) gives a row marked
// infeasible with its reason, and the sweep goes on. Throws, for the first
// point in order that fails otherwise, its error prefixed with "point
// '<name>': " (UserError stays a UserError). Returns one result per point,
// in point order.
std::vector<PointResult> RunSweep(const Sweep& sweep, const SweepRunOptions& options = {});

// sweep.csv: one column per axis (its path), then sim::CsvHeader()'s columns
// (the scenario column holds the point name), then those of
// averaging_period, strategy and sync that CsvHeader() lacks. No trailing
// newline.
std::string SweepCsvHeader(const Sweep& sweep);
// Header and one row per point, each line ending in '\n'.
std::string SweepCsv(const Sweep& sweep, const std::vector<PointResult>& results);

}  // namespace dtsim::study
