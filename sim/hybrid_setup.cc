#include "sim/hybrid_setup.h"

#include <algorithm>

#include "common/error.h"
#include "plan/layers.h"
#include "plan/partition.h"
#include "sim/memory.h"

namespace dtsim::sim {

HybridSetup MakeHybridSetup(const config::Scenario& s, const models::ModelGraph& graph,
                            const CostModel& cost_model) {
  const auto& h = s.parallelism.hybrid;
  const int n = s.cluster.num_devices();
  HybridSetup x;
  plan::HybridOptions& o = x.options;
  const bool model = s.parallelism.strategy == config::Strategy::kModel;
  o.tensor = model ? 1 : h.tensor_parallel;
  o.pipeline = model && h.pipeline_parallel == 1 ? s.cluster.devices_per_node : h.pipeline_parallel;
  o.virtual_stages = h.schedule == config::PipelineSchedule::kInterleaved ? h.virtual_stages : 1;
  o.schedule = model ? plan::PipelineSchedule::kGpipe : h.schedule;
  o.recompute = s.parallelism.recompute;
  o.algorithm = s.parallelism.algorithm;
  o.iterations = std::min(2, s.workload.iterations);
  if (o.tensor < 1 || o.pipeline < 1 || n % (o.tensor * o.pipeline) != 0)
    throw UserError("tensor_parallel x pipeline_parallel (" + std::to_string(o.tensor) + " x " +
                        std::to_string(o.pipeline) + ") must divide the " + std::to_string(n) +
                        " devices",
                    "data parallelism is devices / (tensor_parallel x pipeline_parallel)");
  const int d = n / (o.tensor * o.pipeline);
  if (model) {
    o.micro_batch = s.workload.batch_per_device;
    o.micro_batches = 1;
  } else {
    o.micro_batch = h.micro_batch_size;
    const int per_step = d * h.micro_batch_size;
    const int global = h.global_batch > 0 ? h.global_batch : per_step * o.pipeline;
    if (global % per_step != 0)
      throw UserError("global_batch (" + std::to_string(global) + ") is not a multiple of data "
                      "parallelism x micro_batch_size (" + std::to_string(d) + " x " +
                      std::to_string(h.micro_batch_size) + ")");
    o.micro_batches = global / per_step;
  }
  x.shard = plan::TensorParallelShard(graph, o.tensor);
  const auto units = plan::LayerUnits(x.shard);
  const int parts = o.pipeline * o.virtual_stages;
  if (parts > static_cast<int>(units.size()))
    throw UserError("the model has " + std::to_string(units.size()) + " layer units, fewer than the " +
                    std::to_string(parts) + " pipeline chunks");
  if (!h.stage_layers.empty()) {
    o.chunks = plan::ChunksFromCounts(units, h.stage_layers);
    if (static_cast<int>(o.chunks.size()) != parts)
      throw UserError("parallelism.stage_layers has " + std::to_string(o.chunks.size()) +
                      " entries, the pipeline has " + std::to_string(parts) + " chunks");
  } else if (h.even_layers) {
    o.chunks = plan::EvenLayerChunks(units, parts);
  } else {
    // Balance the chunks' forward + backward time for one micro-batch,
    // within the device's memory.
    std::vector<double> cost, static_bytes, activation_bytes;
    MemoryInputs in;
    in.graph = &graph;
    in.tensor_parallel = o.tensor;
    in.data_parallel = d;
    in.zero_stage = s.parallelism.zero_stage;
    in.optimizer = s.parallelism.optimizer;
    in.mixed_precision = s.workload.precision == hw::Precision::kFp16 ||
                         s.workload.precision == hw::Precision::kBf16;
    in.micro_batch_size = o.micro_batch;
    in.recompute = s.parallelism.recompute;
    for (const auto& u : units) {
      double c = 0;
      in.ops.clear();
      for (models::OpId v = u.begin; v < u.end; ++v) {
        const models::Op& op = x.shard.op(v);
        c += cost_model.ComputeSeconds(op, plan::TaskKind::kForward, o.micro_batch);
        c += cost_model.ComputeSeconds(op, plan::TaskKind::kBackwardInput, o.micro_batch);
        if (op.HasParams()) c += cost_model.ComputeSeconds(op, plan::TaskKind::kBackwardWeight, o.micro_batch);
        in.ops.push_back(v);
      }
      cost.push_back(c);
      const MemoryBreakdown mem = DeviceMemory(in);
      static_bytes.push_back(mem.StaticBytes());
      activation_bytes.push_back(mem.activations_bytes);
    }
    std::vector<int> in_flight;
    for (int k = 0; k < parts; ++k) {
      const int stage_in_flight =
          MicroBatchesInFlight(o.schedule, k % o.pipeline, o.pipeline, o.micro_batches, o.virtual_stages);
      in_flight.push_back((stage_in_flight + o.virtual_stages - 1) / o.virtual_stages);
    }
    // With v chunks per device, each chunk gets 1/v of its memory.
    bool fits = true;
    o.chunks = plan::BalancedChunksWithinMemory(units, cost, static_bytes, activation_bytes,
                                                in_flight,
                                                cost_model.device().memory_bytes / o.virtual_stages,
                                                parts, &fits);
    x.partition_note = fits ? "balanced within memory" : "balanced (no split fits in memory)";
  }
  return x;
}

}  // namespace dtsim::sim
