// The vTrain measurements (../shared/validation/vtrain/, README.md there):
// iteration times of GPT-style models trained with Megatron-DeepSpeed on
// A100 clusters, and the dtsim scenario that describes each measured run.
//
// Two CSV files, each starting with a UTF-8 byte-order mark:
//   ground_truth_single.csv  # GPUs, global batch, micro batch, hidden size,
//                            attention heads, # layers, sequence length,
//                            tensor parallelism, data parallelism,
//                            pipeline parallelism, iteration time (ms)
//   ground_truth_multi.csv   Parameters (billion), then the same columns
// Columns are found by their header names, so their order does not matter.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "hw/catalog.h"

namespace dtsim::validation {

enum class VtrainGroup {
  kSingleNode,  // ground_truth_single.csv: 2 to 8 GPUs in one node
  kMultiNode,   // ground_truth_multi.csv: 64 to 512 GPUs, 8 per node
};
const char* VtrainGroupName(VtrainGroup g);  // "single-node", "multi-node"

// One measured run: one data row of a CSV file.
struct VtrainRow {
  VtrainGroup group = VtrainGroup::kSingleNode;
  std::string file;             // file name the row comes from ("ground_truth_single.csv")
  int line = 0;                 // 1-based line in that file (the header is line 1)
  double params_billion = 0;    // multi-node files only; 0 when the file has no such column
  int gpus = 0;
  int global_batch = 0;         // samples per iteration over all data-parallel replicas
  int micro_batch = 0;          // samples per micro-batch
  int hidden = 0;
  int heads = 0;
  int layers = 0;
  int sequence = 0;             // tokens per sample
  int tensor_parallel = 0;      // t
  int data_parallel = 0;        // d
  int pipeline_parallel = 0;    // p
  double measured_ms = 0;       // iteration time (ms)

  // "ground_truth_single.csv:17": where the row is, for messages and reports.
  std::string Where() const;
};

// Parses the text of one file. A leading UTF-8 byte-order mark and '\r'
// line ends are accepted; blank lines are skipped. Throws UserError at
// `filename`:line when a column is missing from the header, a row has the
// wrong number of fields, a field is not a number (integers where the
// column counts things), a size is <= 0, or t x d x p differs from # GPUs.
std::vector<VtrainRow> ParseVtrainCsv(const std::string& text, const std::string& filename,
                                      VtrainGroup group);

// Both files of `dir`, ground_truth_single.csv then ground_truth_multi.csv,
// each row in file order; `limit` > 0 keeps only the first `limit` rows of
// each file. Throws UserError (with a hint) when a file cannot be read.
std::vector<VtrainRow> LoadVtrainData(const std::string& dir, int limit = 0);

// Name of the scenario's own intra-node link (VtrainSetup).
inline constexpr const char* kVtrainNvlink = "vtrain-nvlink";

// The measured setup that every row shares (validation/README.md). The
// defaults are what vTrain's validation configuration states; nothing here
// is fitted to the measurements.
struct VtrainSetup {
  // vTrain names "A100" without the memory size; the SXM4 80GB board (HBM2e,
  // 2,039 GB/s) is taken.
  std::string device = "A100-SXM4-80GB";
  int devices_per_node = 8;
  // Between the GPUs of a node. vTrain states "150 GB/s (total, NVLink)":
  // taken as each GPU's bandwidth per direction into the node's NVLink
  // fabric, which is what a dtsim link gives (hw/catalog.h). The scenario
  // defines that link (cluster.custom_links, named kVtrainNvlink) with the
  // latency of the catalog's "nvswitch-a100". A catalog name here uses that
  // link instead, e.g. "nvswitch-a100" (the A100 datasheet's 300 GB/s per
  // direction).
  std::string intra_node_link;                // "" = the custom link
  double intra_node_bw_bytes_per_s = 150e9;   // the custom link's bandwidth, per direction
  // Between nodes: 800 Gb/s per node in all = 4 x InfiniBand HDR (200 Gb/s).
  std::string network_link = "ib-hdr";
  int nics_per_node = 4;
  int vocab = 50257;                    // GPT-2 tokenizer
  hw::Precision precision = hw::Precision::kFp16;  // Megatron-DeepSpeed's usual mixed precision
  config::PipelineSchedule schedule = config::PipelineSchedule::kOneFOneB;
  bool recompute = true;                // activation checkpointing on
  // "No gradient bucketing": gradients are all-reduced after the backward
  // pass, in one piece (Megatron's local DDP), not bucket by bucket during it.
  bool overlap = false;
  double bucket_bytes = 1024.0 * 1024 * 1024 * 1024;  // 1 TiB: one bucket for any model here
  // Simulated iterations; sim decides which it measures (with one, that one).
  int iterations = 1;
  // Fixed overhead per op (workload.kernel_launch); 0 = the simulator's
  // default (CUDA launch latency, 5 us). `dtsim validate vtrain
  // --kernel-launch` sets it for all rows at once, e.g. to stand for the
  // framework's per-op CPU overhead (PyTorch eager).
  double kernel_launch_s = 0;
  // workload.cost_model for every row; unset = the simulator's choice (the
  // kernel model for the A100, the roofline with kernel_launch_s set).
  std::optional<config::CostModelKind> cost_model;
  // workload.framework for every row (config/framework.h); default none,
  // the devices alone. `dtsim validate vtrain --framework megatron-lm`.
  config::FrameworkProfile framework = *config::FindFramework("none");
  // cluster.network.protocols for every row: "ideal" or "nccl".
  std::string protocols = "ideal";
  // cluster.network's transports for every row (config/transport.h);
  // native unless `--fit transport.efficiency` (or another transport
  // constant) fitted them.
  config::TransportProfile transport;
  config::TransportProfile intra_node_transport;
};

// The scenario of one row: strategy hybrid on ceil(gpus / devices_per_node)
// nodes of min(gpus, devices_per_node) GPUs, a transformer {layers, hidden, heads, sequence, vocab},
// t, p, micro-batch and global batch from the row, and `setup`. Every
// efficiency stays at sim's defaults. batch_per_device is the replica's
// samples per iteration (global batch / d). The name is "vtrain/<file>:<line>".
config::Scenario VtrainScenario(const VtrainRow& row, const VtrainSetup& setup = {});

}  // namespace dtsim::validation
