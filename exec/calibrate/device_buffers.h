// Buffers of one Backend for the calibration benchmarks, freed together.
// Inputs are deterministic: element i of Random(count, seed) is
// 2 * CounterUniform(seed, i) - 1, in [-1, 1), on every machine.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/backend.h"

namespace dtsim::exec {

class DeviceBuffers {
 public:
  // `backend` must outlive this object.
  explicit DeviceBuffers(Backend& backend) : backend_(backend) {}
  // Frees every buffer made here.
  ~DeviceBuffers();
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;

  // `count` floats in [-1, 1) (see above).
  float* Random(std::int64_t count, std::uint64_t seed);
  // `count` floats equal to `value`.
  float* Filled(std::int64_t count, float value);
  // A copy of `host`.
  float* From(const std::vector<float>& host);

 private:
  float* Allocate(std::int64_t count);

  Backend& backend_;
  std::vector<float*> buffers_;
};

}  // namespace dtsim::exec
