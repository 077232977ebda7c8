// The benchmarks' common workload: ResNet-50 data parallel with ring
// all-reduce, 8 V100s per node on 100 GbE, fp16, batch 64 per GPU.
#pragma once

#include "config/scenario.h"

namespace dtsim::bench {

// REQUIRES: gpus a multiple of 8.
inline config::Scenario ResNet50Scenario(int gpus, int iterations) {
  config::Scenario s;
  s.cluster.devices_per_node = 8;
  s.cluster.nodes = gpus / 8;
  s.cluster.device = "V100-SXM2-32GB";
  s.cluster.intra_node_link = "nvlink2";
  s.cluster.network.link = "100GbE";
  s.workload.model.zoo_name = "resnet50";
  s.workload.batch_per_device = 64;
  s.workload.precision = hw::Precision::kFp16;
  s.workload.iterations = iterations;
  return s;
}

}  // namespace dtsim::bench
