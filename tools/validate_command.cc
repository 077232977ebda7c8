// `dtsim validate vtrain`: predicts every measured run of vTrain's data and
// reports how far the predictions are (validation/).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <thread>

#include "common/error.h"
#include "common/units.h"
#include "hw/catalog.h"
#include "tools/commands.h"
#include "tools/output_set.h"
#include "tools/progress_bar.h"
#include "validation/vtrain.h"
#include "validation/vtrain_predict.h"
#include "validation/vtrain_report.h"

namespace dtsim::tools {
namespace {

void Write(OutputSet& files, const std::string& name, const std::string& content) {
  auto f = files.Open(name);
  f << content;
  CloseOutput(f, name);
}

std::string ErrorLine(const char* group, const validation::ErrorSummary& e) {
  char line[160];
  if (e.predicted == 0) {
    std::snprintf(line, sizeof line, "%-12s %6d %7d %7s %7s %7s %8s\n", group, e.runs, e.failed,
                  "-", "-", "-", "-");
  } else {
    std::snprintf(line, sizeof line, "%-12s %6d %7d %7.1f %7.1f %7.1f %+8.1f\n", group, e.runs,
                  e.failed, e.mean_ape, e.median_ape, e.max_ape, e.mean_signed_pe);
  }
  return line;
}

}  // namespace

void ValidateCommand(const ValidateOptions& o, std::ostream& out, std::ostream& err) {
  if (o.dataset != "vtrain") {
    throw UserError("unknown validation data set '" + o.dataset + "'", "known: vtrain");
  }
  validation::VtrainSetup setup;
  if (!o.intra_node_link.empty()) {
    if (hw::HardwareCatalog::BuiltIn().FindLink(o.intra_node_link) == nullptr) {
      throw UserError("--intra-node-link: unknown link '" + o.intra_node_link + "'",
                      "use a link of the catalog (dtsim devices), e.g. nvswitch-a100");
    }
    setup.intra_node_link = o.intra_node_link;
  }
  if (!o.kernel_launch.empty())
    setup.kernel_launch_s = ParseQuantity(o.kernel_launch, Dimension::kTime, {"--kernel-launch"});
  const std::vector<validation::VtrainRow> rows = validation::LoadVtrainData(o.data_dir, o.limit);
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  ProgressBar bar(err, o.err_is_terminal, "rows");
  validation::PredictOptions predict;
  predict.setup = setup;
  predict.jobs = jobs;
  if (!o.quiet) predict.progress = [&bar](int done, int total) { bar.Update(done, total); };
  const std::vector<validation::RowPrediction> predictions =
      validation::PredictVtrain(rows, predict);
  bar.Finish();
  const double seconds = bar.Elapsed();

  const std::vector<validation::RowResult> results = validation::JoinResults(rows, predictions);
  const validation::VtrainSummary summary = validation::SummarizeVtrain(results);
  OutputSet files{std::filesystem::path(o.out_dir)};
  Write(files, "predictions.csv", validation::PredictionsCsv(results));
  Write(files, "summary.json", validation::SummaryJson(summary, results, setup));
  Write(files, "summary.md", validation::SummaryMarkdown(summary, results, setup));
  Write(files, "scatter.svg", validation::ScatterSvg(results));
  const auto written = files.Commit();

  if (o.quiet) return;
  char line[200];
  std::snprintf(line, sizeof line, "vtrain: %zu rows in %.1f s (%d jobs)\n", rows.size(), seconds,
                std::min<int>(jobs, static_cast<int>(std::max<std::size_t>(1, rows.size()))));
  err << line;
  out << "group          runs  failed  MAPE %  median   max %  signed %\n";
  out << ErrorLine("all", summary.overall);
  out << ErrorLine("single-node", summary.single_node);
  out << ErrorLine("multi-node", summary.multi_node);
  for (const auto& f : summary.failures) {
    out << f.rows << " row(s) failed, first " << f.first << ": " << f.message << "\n";
  }
  for (const auto& path : written) out << "wrote " << path.string() << "\n";
}

}  // namespace dtsim::tools
