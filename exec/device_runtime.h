// The GPU side of real runs: a device Backend for this rank and, where NCCL
// is available, the all-reduce that carries collectives between device
// buffers. Built from exec/cuda/ when dtsim has CUDA
// (device_runtime_cuda.cc), else a stand-in that says why there is none
// (device_runtime_none.cc); callers have no #ifdef.
#pragma once

#include <cstdint>
#include <memory>

#include "exec/backend.h"
#include "exec/comm/communicator.h"

namespace dtsim::exec {

// Sum all-reduce over every rank of the world, in place on device buffers.
class DeviceAllReduce {
 public:
  virtual ~DeviceAllReduce() = default;
  // REQUIRES: every rank calls it with the same count, in the same order.
  virtual void Sum(float* device_buffer, std::int64_t count) = 0;
};

struct DeviceRuntime {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<DeviceAllReduce> all_reduce;  // null without NCCL
  // This node's ranks outnumber its GPUs: processes time-share a device.
  bool shares_device = false;
};

// A CUDA backend on GPU (local rank % visible GPUs), local rank being this
// rank's index among the ranks of its node (OMPI_COMM_WORLD_LOCAL_RANK, else
// the world rank); with NCCL, when this node's ranks do not outnumber its
// GPUs, the world's communicator (its id broadcast from rank 0 over
// `world`); ranks that share a GPU get no all_reduce (NCCL refuses them), so
// their all-reduces go through MPI in host memory. Assumes every node has as
// many ranks per GPU. Every rank of `world` must call it. Throws
// UserError when dtsim was built without CUDA or no GPU is visible.
DeviceRuntime MakeCudaRuntime(Communicator& world);

}  // namespace dtsim::exec
