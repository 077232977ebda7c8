#include "exec/runtime/optimizer.h"

#include "common/error.h"

namespace dtsim::exec {

const char* OptimizerAlgorithmName(OptimizerAlgorithm a) {
  switch (a) {
    case OptimizerAlgorithm::kSgd: return "sgd";
    case OptimizerAlgorithm::kMomentum: return "momentum";
    case OptimizerAlgorithm::kAdam: return "adam";
  }
  return "?";
}

Optimizer::Optimizer(Backend& backend, std::int64_t count, const OptimizerOptions& options)
    : backend_(backend), count_(count), options_(options), schedule_(options.lr) {
  if (options_.algorithm != OptimizerAlgorithm::kSgd) {
    m_ = backend_.Allocate(count_);
    backend_.Fill(m_, count_, 0.0f);
  }
  if (options_.algorithm == OptimizerAlgorithm::kAdam) {
    v_ = backend_.Allocate(count_);
    backend_.Fill(v_, count_, 0.0f);
  }
}

Optimizer::~Optimizer() {
  backend_.Free(m_);
  backend_.Free(v_);
}

void Optimizer::Step(float* params, const float* grads) {
  const auto lr = static_cast<float>(schedule_.At(steps_));
  switch (options_.algorithm) {
    case OptimizerAlgorithm::kSgd:
      backend_.SgdStep(count_, lr, static_cast<float>(options_.weight_decay), grads, params);
      break;
    case OptimizerAlgorithm::kMomentum:
      backend_.MomentumStep(count_, lr, static_cast<float>(options_.momentum), grads, m_, params);
      break;
    case OptimizerAlgorithm::kAdam:
      backend_.AdamStep(count_, lr, static_cast<float>(options_.beta1),
                        static_cast<float>(options_.beta2), static_cast<float>(options_.epsilon),
                        steps_ + 1, grads, m_, v_, params);
      break;
  }
  ++steps_;
}

std::map<std::string, std::vector<float>> Optimizer::State() const {
  std::map<std::string, std::vector<float>> state;
  auto save = [&](const char* name, const float* p) {
    std::vector<float> host(static_cast<std::size_t>(count_));
    backend_.Download(host.data(), p, count_);
    state[name] = std::move(host);
  };
  if (options_.algorithm == OptimizerAlgorithm::kMomentum) save("momentum", m_);
  if (options_.algorithm == OptimizerAlgorithm::kAdam) {
    save("adam.m", m_);
    save("adam.v", v_);
  }
  return state;
}

void Optimizer::SetState(const std::map<std::string, std::vector<float>>& state,
                         std::int64_t steps) {
  auto load = [&](const char* name, float* p) {
    const auto it = state.find(name);
    if (it == state.end() || static_cast<std::int64_t>(it->second.size()) != count_)
      throw UserError(std::string("checkpoint lacks optimizer state '") + name +
                      "' of the right size");
    backend_.Upload(p, it->second.data(), count_);
  };
  if (options_.algorithm == OptimizerAlgorithm::kMomentum) load("momentum", m_);
  if (options_.algorithm == OptimizerAlgorithm::kAdam) {
    load("adam.m", m_);
    load("adam.v", v_);
  }
  steps_ = steps;
}

}  // namespace dtsim::exec
