#include "exec/calibrate/device_buffers.h"

#include "exec/counter_rng.h"

namespace dtsim::exec {

DeviceBuffers::~DeviceBuffers() {
  for (float* p : buffers_) backend_.Free(p);
}

float* DeviceBuffers::Allocate(std::int64_t count) {
  buffers_.reserve(buffers_.size() + 1);  // so that push_back cannot throw and leak
  float* p = backend_.Allocate(count);
  buffers_.push_back(p);
  return p;
}

float* DeviceBuffers::Random(std::int64_t count, std::uint64_t seed) {
  std::vector<float> host(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = 2.0f * CounterUniform(seed, i) - 1.0f;
  return From(host);
}

float* DeviceBuffers::Filled(std::int64_t count, float value) {
  float* p = Allocate(count);
  backend_.Fill(p, count, value);
  return p;
}

float* DeviceBuffers::From(const std::vector<float>& host) {
  const auto count = static_cast<std::int64_t>(host.size());
  float* p = Allocate(count);
  backend_.Upload(p, host.data(), count);
  return p;
}

}  // namespace dtsim::exec
