#include "validation/deepbench_fit.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <span>

#include "common/error.h"
#include "common/parallel_for.h"

namespace dtsim::validation {
namespace {

constexpr double kSteps[] = {0.6, 0.75, 0.85, 0.93, 1.07, 1.15, 1.3, 1.6};
constexpr double kFineSteps[] = {0.97, 0.99, 1.01, 1.03};
constexpr int kMaxRounds = 8;
constexpr double kTolerance = 1e-4;

// Coordinate descent over `coordinates` (pointers into *params).
void DescendWith(const std::vector<DeepbenchMeasurement>& rows, const hw::HardwareCatalog& catalog,
                 const std::vector<double*>& coordinates, std::span<const double> steps,
                 sim::GpuKernelParams* params) {
  auto is_fraction = [&](const double* x) {
    if (x == &params->simt_fraction || x == &params->tensor_fraction ||
        x == &params->implicit_gemm_fraction || x == &params->winograd_fraction ||
        x == &params->dgrad_fraction || x == &params->wgrad_fraction)
      return true;
    for (const double& f : params->simt_fraction_by_arch)
      if (x == &f) return true;
    for (const double& f : params->tensor_fraction_by_arch)
      if (x == &f) return true;
    for (const auto* a : {&params->winograd_fraction_by_arch, &params->dgrad_fraction_by_arch,
                          &params->wgrad_fraction_by_arch})
      for (const double& f : *a)
        if (x == &f) return true;
    return false;
  };
  double best = DeepbenchObjective(rows, catalog, *params);
  for (int round = 0; round < kMaxRounds; ++round) {
    const double start = best;
    for (double* x : coordinates) {
      const double base = *x;
      double best_value = base;
      for (double step : steps) {
        *x = base * step;
        // Fractions of a peak stay below 1.3 (boards boost above the
        // datasheet clock, not further).
        if (is_fraction(x) && *x > 1.3) continue;
        const double f = DeepbenchObjective(rows, catalog, *params);
        if (f < best) {
          best = f;
          best_value = *x;
        }
      }
      *x = best_value;
    }
    if (start - best < kTolerance) break;
  }
}

// Coarse steps, then fine ones from where they end.
void Descend(const std::vector<DeepbenchMeasurement>& rows, const hw::HardwareCatalog& catalog,
             const std::vector<double*>& coordinates, sim::GpuKernelParams* params) {
  DescendWith(rows, catalog, coordinates, kSteps, params);
  DescendWith(rows, catalog, coordinates, kFineSteps, params);
}

}  // namespace

double DeepbenchObjective(const std::vector<DeepbenchMeasurement>& rows,
                          const hw::HardwareCatalog& catalog, const sim::GpuKernelParams& params) {
  std::map<std::string, sim::GpuKernelModel> models;
  double sum = 0;
  for (const DeepbenchMeasurement& m : rows) {
    auto it = models.find(m.gpu);
    if (it == models.end())
      it = models.emplace(m.gpu, DeepbenchModel(catalog, m.gpu, params)).first;
    sum += std::fabs(std::log(PredictDeepbench(it->second, m).predicted_s / m.measured_s));
  }
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

sim::GpuKernelParams FitStart() {
  sim::GpuKernelParams p;
  p.simt_fraction = 0.87;
  p.tensor_fraction = 0.80;
  p.simt_half_reuse = 4.0;
  p.tensor_half_reuse = 12.0;
  p.k_fill = 32;
  p.implicit_gemm_fraction = 0.90;
  p.winograd_fraction = 0.75;
  p.kernel_fixed_s = 4e-6;
  p.dgrad_fraction = 1.0;
  p.wgrad_fraction = 1.0;
  p.simt_fraction_by_arch.fill(0);
  p.tensor_fraction_by_arch.fill(0);
  p.simt_half_reuse_by_arch.fill(0);
  p.winograd_fraction_by_arch.fill(0);
  p.dgrad_fraction_by_arch.fill(0);
  p.wgrad_fraction_by_arch.fill(0);
  p.clock_fraction_by_device.clear();
  p.rnn_step_fraction = 1.0;
  p.rnn_dgrad_fraction = 1.0;
  p.rnn_host_step_s = 10e-6;
  p.rnn_step_fraction_by_arch.fill(0);
  p.rnn_host_step_s_by_arch.fill(0);
  p.rnn_dgrad_fraction_by_arch.fill(0);
  return p;
}

// Step 5: the recurrent-step constants on the recurrent layers' rows, every
// other constant fixed; shared ones first, then each generation's from its
// rows, starting at the shared values.
void FitRecurrent(const std::vector<DeepbenchMeasurement>& rnn_rows,
                  const hw::HardwareCatalog& catalog, sim::GpuKernelParams* p) {
  if (rnn_rows.empty()) return;
  Descend(rnn_rows, catalog,
          {&p->rnn_step_fraction, &p->rnn_dgrad_fraction, &p->rnn_host_step_s}, p);
  std::map<std::size_t, std::vector<DeepbenchMeasurement>> by_arch;
  for (const DeepbenchMeasurement& m : rnn_rows)
    by_arch[static_cast<std::size_t>(catalog.FindDevice(DeepbenchDevice(m.gpu))->arch)]
        .push_back(m);
  for (const auto& [arch, arch_rows] : by_arch) {
    p->rnn_step_fraction_by_arch[arch] = p->rnn_step_fraction;
    p->rnn_host_step_s_by_arch[arch] = p->rnn_host_step_s;
    p->rnn_dgrad_fraction_by_arch[arch] = p->rnn_dgrad_fraction;
    Descend(arch_rows, catalog,
            {&p->rnn_step_fraction_by_arch[arch], &p->rnn_dgrad_fraction_by_arch[arch],
             &p->rnn_host_step_s_by_arch[arch]},
            p);
  }
}

// Step 3 for one generation: its values start at the shared ones and are
// fitted on its rows, everything else fixed.
void FitGeneration(std::size_t arch, const std::vector<DeepbenchMeasurement>& arch_rows,
                   bool has_tensor, const hw::HardwareCatalog& catalog,
                   sim::GpuKernelParams* p) {
  p->simt_fraction_by_arch[arch] = p->simt_fraction;
  p->simt_half_reuse_by_arch[arch] = p->simt_half_reuse;
  p->winograd_fraction_by_arch[arch] = p->winograd_fraction;
  p->dgrad_fraction_by_arch[arch] = p->dgrad_fraction;
  p->wgrad_fraction_by_arch[arch] = p->wgrad_fraction;
  std::vector<double*> coordinates = {
      &p->simt_fraction_by_arch[arch], &p->simt_half_reuse_by_arch[arch],
      &p->winograd_fraction_by_arch[arch], &p->dgrad_fraction_by_arch[arch],
      &p->wgrad_fraction_by_arch[arch]};
  if (has_tensor) {
    p->tensor_fraction_by_arch[arch] = p->tensor_fraction;
    coordinates.push_back(&p->tensor_fraction_by_arch[arch]);
  }
  Descend(arch_rows, catalog, coordinates, p);
}

// Rows by generation (hw::GpuArch index), and whether each has fp16-mixed rows.
void ByGeneration(const std::vector<DeepbenchMeasurement>& rows,
                  const hw::HardwareCatalog& catalog,
                  std::map<std::size_t, std::vector<DeepbenchMeasurement>>* by_arch,
                  std::map<std::size_t, bool>* has_tensor) {
  for (const DeepbenchMeasurement& m : rows) {
    const auto arch = static_cast<std::size_t>(catalog.FindDevice(DeepbenchDevice(m.gpu))->arch);
    (*by_arch)[arch].push_back(m);
    if (m.precision == "fp16-mixed") (*has_tensor)[arch] = true;
  }
}

sim::GpuKernelParams FitGenerationParams(const std::vector<DeepbenchMeasurement>& rows,
                                         const hw::HardwareCatalog& catalog,
                                         sim::GpuKernelParams base) {
  std::map<std::size_t, std::vector<DeepbenchMeasurement>> by_arch;
  std::map<std::size_t, bool> has_tensor;
  ByGeneration(rows, catalog, &by_arch, &has_tensor);
  for (const auto& [arch, arch_rows] : by_arch)
    FitGeneration(arch, arch_rows, has_tensor[arch], catalog, &base);
  return base;
}

sim::GpuKernelParams FitKernelParams(const std::vector<DeepbenchMeasurement>& all_rows,
                                     const hw::HardwareCatalog& catalog) {
  // Steps 2 to 4 on the GEMM and convolution rows, step 5 on the recurrent
  // layers'.
  std::vector<DeepbenchMeasurement> rows, rnn_rows;
  for (const DeepbenchMeasurement& m : all_rows)
    (std::string(DeepbenchKernelGroup(m.kind)) == "rnn" ? rnn_rows : rows).push_back(m);
  sim::GpuKernelParams p = FitStart();
  Descend(rows, catalog,
          {&p.simt_fraction, &p.tensor_fraction, &p.simt_half_reuse, &p.tensor_half_reuse,
           &p.k_fill, &p.implicit_gemm_fraction, &p.winograd_fraction, &p.dgrad_fraction,
           &p.wgrad_fraction, &p.kernel_fixed_s},
          &p);
  // Per generation: start from the shared value, fit on that generation's rows.
  std::map<std::size_t, std::vector<DeepbenchMeasurement>> by_arch;
  std::map<std::size_t, bool> has_tensor;
  ByGeneration(rows, catalog, &by_arch, &has_tensor);
  for (const auto& [arch, arch_rows] : by_arch)
    FitGeneration(arch, arch_rows, has_tensor[arch], catalog, &p);
  // Per board, everything else fixed.
  std::map<std::string, std::vector<DeepbenchMeasurement>> by_device;
  for (const DeepbenchMeasurement& m : rows) by_device[DeepbenchDevice(m.gpu)].push_back(m);
  for (const auto& [device, device_rows] : by_device) {
    p.clock_fraction_by_device[device] = 1.0;
    Descend(device_rows, catalog, {&p.clock_fraction_by_device[device]}, &p);
  }
  FitRecurrent(rnn_rows, catalog, &p);
  return p;
}

std::vector<HeldOutFit> FitLeaveOneGpuOut(const std::vector<DeepbenchMeasurement>& rows,
                                          const hw::HardwareCatalog& catalog, int jobs) {
  std::vector<HeldOutFit> folds;
  for (const DeepbenchMeasurement& m : rows) {
    bool seen = false;
    for (const HeldOutFit& f : folds) seen = seen || f.gpu == m.gpu;
    if (!seen) folds.push_back({m.gpu, {}});
  }
  const auto failure = ParallelFor(folds.size(), jobs, {}, 1.0, [&](std::size_t i) {
    std::vector<DeepbenchMeasurement> train;
    for (const DeepbenchMeasurement& m : rows)
      if (m.gpu != folds[i].gpu) train.push_back(m);
    folds[i].params = FitKernelParams(train, catalog);
  });
  if (failure) std::rethrow_exception(failure->error);
  return folds;
}

std::string ParamsAsText(const sim::GpuKernelParams& p) {
  std::string out;
  char line[160];
  auto add = [&](const char* name, double v) {
    std::snprintf(line, sizeof line, "%s = %.4g\n", name, v);
    out += line;
  };
  add("simt_fraction", p.simt_fraction);
  add("tensor_fraction", p.tensor_fraction);
  add("memory_fraction", p.memory_fraction);
  add("simt_half_reuse", p.simt_half_reuse);
  add("tensor_half_reuse", p.tensor_half_reuse);
  add("k_fill", p.k_fill);
  add("implicit_gemm_fraction", p.implicit_gemm_fraction);
  add("winograd_fraction", p.winograd_fraction);
  add("dgrad_fraction", p.dgrad_fraction);
  add("wgrad_fraction", p.wgrad_fraction);
  add("kernel_fixed_s", p.kernel_fixed_s);
  add("rnn_step_fraction", p.rnn_step_fraction);
  add("rnn_dgrad_fraction", p.rnn_dgrad_fraction);
  add("rnn_host_step_s", p.rnn_host_step_s);
  for (std::size_t a = 0; a < p.simt_fraction_by_arch.size(); ++a) {
    const char* arch = hw::GpuArchName(static_cast<hw::GpuArch>(a));
    if (p.simt_fraction_by_arch[a] > 0)
      add(("simt_fraction[" + std::string(arch) + "]").c_str(), p.simt_fraction_by_arch[a]);
    for (const auto& [label, values] :
         {std::pair{"winograd_fraction", &p.winograd_fraction_by_arch},
          std::pair{"dgrad_fraction", &p.dgrad_fraction_by_arch},
          std::pair{"wgrad_fraction", &p.wgrad_fraction_by_arch}})
      if ((*values)[a] > 0) add((std::string(label) + "[" + arch + "]").c_str(), (*values)[a]);
    if (p.simt_half_reuse_by_arch[a] > 0)
      add(("simt_half_reuse[" + std::string(arch) + "]").c_str(), p.simt_half_reuse_by_arch[a]);
    if (p.tensor_fraction_by_arch[a] > 0)
      add(("tensor_fraction[" + std::string(arch) + "]").c_str(), p.tensor_fraction_by_arch[a]);
    if (p.rnn_step_fraction_by_arch[a] > 0)
      add(("rnn_step_fraction[" + std::string(arch) + "]").c_str(), p.rnn_step_fraction_by_arch[a]);
    if (p.rnn_dgrad_fraction_by_arch[a] > 0)
      add(("rnn_dgrad_fraction[" + std::string(arch) + "]").c_str(), p.rnn_dgrad_fraction_by_arch[a]);
    if (p.rnn_host_step_s_by_arch[a] > 0)
      add(("rnn_host_step_s[" + std::string(arch) + "]").c_str(), p.rnn_host_step_s_by_arch[a]);
  }
  for (const auto& [device, f] : p.clock_fraction_by_device)
    add(("clock_fraction[" + device + "]").c_str(), f);
  return out;
}

}  // namespace dtsim::validation
