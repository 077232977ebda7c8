// `dtsim calibrate`: measures the CPU backend of this process (and, over MPI,
// the link between ranks) and writes a device profile (exec/calibrate/,
// docs/device_profile.md).
#include <cstdio>
#include <CLI/CLI.hpp>
#include <memory>
#include "tools/cli.h"
#include <ostream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/units.h"
#include "config/device_profile.h"
#include "exec/calibrate/calibrate.h"
#include "exec/kernels/cpu_isa.h"
#include "tools/commands.h"
#include "tools/host_facts.h"
#include "tools/mpi_launch.h"

namespace dtsim::tools {
namespace {

std::string Rate(const config::ProfileMeasurement& m) {
  if (m.flops > 0) return FormatFlopRate(m.flops / m.seconds);
  if (m.bytes > 0 && m.group != "ping_pong") return FormatBandwidth(m.bytes / m.seconds);
  std::string s = FormatSeconds(m.seconds);
  if (m.group == "ping_pong") {
    s += " one way, ";
    s += FormatBandwidth(m.bytes / m.seconds);
  } else {
    s += " per call";
  }
  return s;
}

void PrintProgress(std::ostream& err, const config::ProfileMeasurement& m, int index, int total) {
  std::string what = m.name;
  if (!m.shape.empty()) {
    what += ' ';
    what += m.shape;
  }
  char line[256];
  std::snprintf(line, sizeof line, "[%2d/%d] %-9s %-32s %s (median of %d, %s each)\n", index,
                total, m.group.c_str(), what.c_str(), Rate(m).c_str(), m.repeats,
                FormatSeconds(m.seconds).c_str());
  err << line << std::flush;
}

void PrintTable(std::ostream& out, const config::DeviceProfile& p) {
  char line[256];
  out << "device profile of " << p.device << " on " << p.provenance.host << "\n";
  std::snprintf(line, sizeof line, "  %-26s %s\n", "peak fp32 (best GEMM)",
                FormatFlopRate(p.peak_fp32_flop_per_s).c_str());
  out << line;
  std::snprintf(line, sizeof line, "  %-26s %s\n", "memory bandwidth (best)",
                FormatBandwidth(p.memory_bw_bytes_per_s).c_str());
  out << line;
  std::snprintf(line, sizeof line, "  %-26s %s\n", "kernel launch (tiny op)",
                FormatSeconds(p.kernel_launch_s).c_str());
  out << line;
  if (p.link) {
    std::snprintf(line, sizeof line, "  %-26s %s, latency %s (%d ranks)\n", "link between ranks",
                  FormatBandwidth(p.link->bw_bytes_per_s).c_str(),
                  FormatSeconds(p.link->latency_s).c_str(), p.link->ranks);
  } else {
    std::snprintf(line, sizeof line, "  %-26s not measured (one rank; use --ranks 2)\n",
                  "link between ranks");
  }
  out << line;
  std::snprintf(line, sizeof line, "%-13s %-30s %14s %10s\n", "op kind", "shape", "rate",
                "efficiency");
  out << line;
  for (const config::ProfileMeasurement& m : p.provenance.measurements) {
    if (m.group != "op") continue;
    double efficiency = 0;
    for (const auto& [kind, e] : p.compute_efficiency) {
      if (m.name == models::OpKindName(kind)) efficiency = e;
    }
    std::snprintf(line, sizeof line, "%-13s %-30s %14s %10.4f\n", m.name.c_str(),
                  m.shape.c_str(), FormatFlopRate(m.flops / m.seconds).c_str(), efficiency);
    out << line;
  }
}

}  // namespace

void CalibrateCommand(const CalibrateCommandOptions& o, exec::Communicator* comm,
                      std::ostream& out, std::ostream& err) {
  if (o.ranks == 1 || o.ranks < 0) {
    throw UserError("--ranks: expected 2 or more ranks, got " + std::to_string(o.ranks),
                    "leave --ranks out to measure this process only");
  }
  if (o.ranks >= 2 && comm == nullptr) {
    std::vector<std::string> args = {"calibrate", "--out", o.out_path};
    if (o.quick) args.emplace_back("--quick");
    if (o.portable) args.emplace_back("--portable");
    if (o.threads > 1) args.insert(args.end(), {"--threads", std::to_string(o.threads)});
    RunUnderMpiLauncher(o.ranks, args, err);
    return;
  }
  const bool leader = comm == nullptr || comm->rank() == 0;
  const exec::CalibrateOptions options{.quick = o.quick};
  const auto progress = [&](const config::ProfileMeasurement& m, int index, int total) {
    if (leader) PrintProgress(err, m, index, total);
  };

  const std::unique_ptr<exec::Backend> backend =
      exec::MakeCpuBackend(o.portable ? exec::CpuIsa::kPortable : exec::BestCpuIsa(), o.threads);
  exec::Backend& cpu = *backend;
  config::ProfileProvenance provenance;
  provenance.date = UtcNow();
  provenance.host = HostName();
  provenance.dtsim_version = DTSIM_VERSION;
  provenance.backend = cpu.Name();
  provenance.threads = o.threads;
  provenance.quick = o.quick;
  // Rank 0 measures the device alone while the other ranks wait, so that
  // the numbers are one device's, not a share of a busy machine's.
  if (leader) provenance.measurements = exec::MeasureDevice(cpu, options, progress);
  if (comm != nullptr && comm->size() >= 2) {
    comm->Barrier();
    for (config::ProfileMeasurement& m : exec::MeasureLink(*comm, options, progress)) {
      provenance.measurements.push_back(std::move(m));
    }
  }
  if (!leader) return;
  const config::DeviceProfile profile = exec::BuildDeviceProfile(
      DeviceDescription(cpu.Name()), provenance, comm != nullptr ? comm->size() : 1);

  WriteFileAtomic(
      o.out_path, [&profile](std::ostream& f) { f << config::DeviceProfileYaml(profile); },
      {.create_folder = true});
  PrintTable(out, profile);
  out << "wrote " << o.out_path << "\n";
}

Command AddCalibrateCommand(CLI::App& app) {
  auto o = std::make_shared<CalibrateCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("calibrate",
                         "Measure this machine's CPU backend (GEMM and convolution rates, memory "
                         "bandwidth, per-op-kind efficiency, per-call overhead) and, over MPI, the "
                         "link between ranks; write a device profile that scenarios name under "
                         "cluster.device_profile (docs/device_profile.md)");
  cmd->add_option("-o,--out", o->out_path, "Device profile to write")->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "Threads the kernels run on while measured (exec and validate "
                  "--threads; default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--portable", o->portable,
                "Measure the portable kernels (baseline x86-64) instead of the fastest "
                "build this CPU runs (AVX2+FMA where present); exec and validate "
                "must then run --portable too");
  cmd->add_flag("--quick", o->quick, "Fewer and smaller measurements (a few seconds; for tests)");
  cmd->add_option("--ranks", o->ranks,
                  "Re-run under 'mpirun -np N' to also measure point-to-point "
                  "latency and bandwidth between ranks (N >= 2)");
  cmd->footer(
      "Started by mpirun with 2 or more ranks (mpirun -np 2 dtsim calibrate), rank 0 measures\n"
      "the device while the others wait, then ranks 0 and 1 play ping-pong; rank 0 writes\n"
      "the profile. Without mpirun and without --ranks, MPI is not used at all.");
  return {cmd, [o](CommandEnv& env) {
            // Without --ranks, a rank of an MPI job measures with the others.
            exec::Communicator* world = nullptr;
            if (o->ranks == 0 && env.StartMpiIfLaunched()) world = env.world();
            CalibrateCommand(*o, world, env.out, env.err);
          }};
}

}  // namespace dtsim::tools
