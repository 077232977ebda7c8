#include "study/tta.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "common/error.h"
#include "exec/data/model_datasets.h"
#include "exec/scenario_run.h"
#include "models/zoo.h"
#include "sim/report.h"
#include "study/tta_text.h"

namespace dtsim::study {
namespace {

// The model trained for real: the named one (a zoo name or a model file),
// else the scenario's.
models::ModelGraph ProxyModel(const std::string& proxy, const config::Scenario& first) {
  if (proxy.empty()) return config::BuildWorkloadModel(first);
  return models::BuildModel(proxy);
}

// The rates of --lr-grid, sorted and unique. Throws UserError for a rate
// that is not finite and > 0.
std::vector<double> RateGrid(std::vector<double> grid) {
  for (double rate : grid) {
    if (!(std::isfinite(rate) && rate > 0))
      throw UserError("--lr-grid: rates must be finite and > 0, got " + Shortest(rate));
  }
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  return grid;
}

std::string LrRuleText(const std::vector<double>& grid, const TtaOptions& o) {
  if (grid.empty()) return Shortest(o.lr) + " for one worker's batch, scaled " + o.lr_scaling;
  std::string g;
  for (double rate : grid) {
    if (!g.empty()) g += ',';
    g += Shortest(rate);
  }
  return "tuned per setting over the grid " + g +
         " (the rate with the fewest mean updates to the target)";
}

}  // namespace

TtaStudy MeasureTta(const Sweep& sweep, const TtaOptions& o, const LocalRun& local_run,
                    std::ostream& err) {
  TtaStudy st;
  for (const SweepPoint& sp : sweep.points) st.points.push_back(SimulateTtaPoint(sp, local_run));
  const config::Scenario& first = sweep.points.front().scenario;
  const models::ModelGraph graph = ProxyModel(o.proxy, first);
  st.model = graph.name();
  Proxy& proxy = st.proxy;
  proxy.name = o.proxy.empty() ? graph.name() : o.proxy;
  proxy.batch = o.batch > 0 ? o.batch : first.workload.batch_per_device;
  proxy.target = TargetOf(o, graph);
  // Every replica trains with the rule `dtsim exec` applies to the
  // scenario; the settings differ only in their initial rate.
  proxy.rule = ProxyOptimizer(o, exec::OptimizerFor(first, 0));
  proxy.grid = RateGrid(o.lr_grid);
  // An IDX folder holds a test split: every run is evaluated on its first
  // eval_samples (as `dtsim exec --eval-every` evaluates); other data on
  // the training set's last samples.
  st.test_split = !o.dataset.empty() && std::filesystem::is_directory(o.dataset);
  const std::unique_ptr<exec::Dataset> test_data =
      st.test_split ? exec::MakeEvalDataset(graph, o.dataset) : nullptr;

  // The settings to measure: every family at the measured worker counts.
  const std::map<Family, std::vector<int>> measured = MeasuredSettings(st.points, o.workers);
  if (measured.empty()) throw InfeasiblePlan("dtsim tta: no point of the sweep can run");
  st.runs = PlanRuns(measured, proxy, o);
  CheckProxyCost(graph, proxy, st.runs, o, err);
  st.lr_rule = LrRuleText(proxy.grid, o);
  if (!o.quiet) {
    err << sweep.name << ": " << st.points.size() << " points simulated; measuring "
        << st.runs.size() << " proxy runs (" << measured.size() << " settings x worker counts x "
        << (proxy.grid.empty() ? 1 : proxy.grid.size()) << " rates x " << o.seeds << " seeds) of "
        << graph.name() << ", batch " << proxy.batch << " per worker, up to " << o.steps
        << " updates, " << RuleText(proxy.rule) << "\n";
  }
  TrainProxyRuns(graph, proxy, o, test_data.get(), &st.runs);
  st.estimates = EstimateUpdates(measured, st.runs, proxy.target);
  st.table = TabulateTta(sweep, st.points, st.estimates, st.runs, proxy, o);
  return st;
}

std::string CurvesCsv(const TtaStudy& study) {
  std::string curves = "setting,workers,seed,lr,update,samples,loss,relative_loss,accuracy\n";
  for (const TtaRun& r : study.runs) {
    for (std::size_t k = 0; k < r.curve.loss.size(); ++k) {
      const double acc = r.curve.accuracy[k];
      curves += sim::CsvField(r.family.Name()) + ',' + std::to_string(r.workers) + ',' +
                std::to_string(r.seed) + ',' + Shortest(r.lr) + ',' +
                std::to_string(r.curve.steps[k]) + ',' + std::to_string(r.curve.samples[k]) + ',' +
                Fixed(r.curve.loss[k], 6) + ',' + Fixed(r.curve.loss[k] / r.curve.loss[0], 6) +
                ',' + (std::isnan(acc) ? std::string() : Fixed(acc, 6)) + "\n";
    }
  }
  return curves;
}

std::size_t TtaXAxis(const Sweep& sweep) {
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (sweep.axes[a].numeric && sweep.axes[a].path.rfind("cluster.", 0) != 0) return a;
  }
  return sweep.axes.size();
}

double TtaX(const Sweep& sweep, std::size_t x_axis, std::size_t point) {
  if (x_axis >= sweep.axes.size()) return static_cast<double>(point + 1);
  return std::strtod(sweep.axes[x_axis].values[sweep.points[point].choice[x_axis]].c_str(),
                     nullptr);
}

std::vector<std::size_t> OtherAxes(const Sweep& sweep, std::size_t x_axis, std::size_t point) {
  std::vector<std::size_t> key;
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    if (a != x_axis) key.push_back(sweep.points[point].choice[a]);
  }
  return key;
}

std::string BestSettingsText(const Sweep& sweep, const TtaStudy& study) {
  const std::size_t x_axis = TtaXAxis(sweep);
  std::map<std::vector<std::size_t>, const TtaRow*> best;
  for (const TtaRow& row : study.table.rows) {
    const TtaRow*& b = best[OtherAxes(sweep, x_axis, row.point)];
    if (b == nullptr || row.time < b->time) b = &row;
  }
  std::string text;
  for (const auto& [key, row] : best) {
    const SweepPoint& sp = sweep.points[row->point];
    const double spu = study.points[row->point].seconds_per_update;
    text += "best: " + sp.name + ": " + Seconds(row->time) + " (" + Seconds(row->steps.low * spu) +
            " to " + Seconds(row->steps.high * spu) + "), " + Fixed(row->steps.mean, 1) +
            " updates of " + Seconds(spu) + (row->steps.fitted ? ", fitted" : "") +
            (row->steps.extrapolated ? " (extrapolated)" : "") + "\n";
  }
  return text;
}

namespace {

// ", N diverged" for the runs of (family, workers) whose loss stopped
// being finite; "" when none did.
std::string Diverged(const std::vector<TtaRun>& runs, const Family& family, int workers) {
  int n = 0;
  for (const TtaRun& r : runs) {
    n += r.family.Key() == family.Key() && r.workers == workers && r.curve.diverged_at >= 0;
  }
  return n == 0 ? "" : ", " + std::to_string(n) + " diverged";
}

}  // namespace

std::string UpdatesSummary(const TtaStudy& study, const TtaOptions& o) {
  std::string s =
      "training rule: " + RuleText(study.proxy.rule) + ", learning rate " + study.lr_rule + "\n";
  s += "updates to " + study.proxy.target.Describe() + " (mean of " + std::to_string(o.seeds) +
       " seeds, 95% band):\n";
  for (const auto& [family, m] : study.estimates) {
    for (std::size_t k = 0; k < m.workers.size(); ++k) {
      const sim::StepsEstimate& e = m.steps[k];
      s += "  " + family.Name() + ", " + std::to_string(m.workers[k]) + " workers: " +
           (e.valid() ? Fixed(e.mean, 1) + " (" + Fixed(e.low, 1) + " to " + Fixed(e.high, 1) +
                            "), lr " + Shortest(m.lr[k])
                      : std::string("not reached by ") + std::to_string(e.seeds - e.reached) +
                            " seed(s)" + Diverged(study.runs, family, m.workers[k])) +
           "\n";
    }
  }
  return s;
}

}  // namespace dtsim::study
