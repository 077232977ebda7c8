// ModelRuntime's recurrent layers (PyTorch nn.RNN with tanh, nn.LSTM,
// nn.GRU; one layer, one direction, zero initial state): the sequence is
// made time-major, then each step is two GEMMs (x_t W_ih^T + b_ih and
// h_{t-1} W_hh^T + b_hh) and the cell; backward runs the steps in reverse
// (backpropagation through time). Parameters: W_ih (G H x I), W_hh
// (G H x H), b_ih, b_hh (G H each), PyTorch's layout and gate order.
#include "common/error.h"
#include "exec/runtime/model_runtime.h"
#include "exec/runtime/runtime_util.h"

namespace dtsim::exec {

void ModelRuntime::RecurrentForward(models::OpId v, int slot) {
  const models::Op& op = graph_.op(v);
  OpState& s = *ops_[v];
  const auto k = static_cast<std::size_t>(slot);
  const runtime_util::RecurrentBuffers r(op, options_.micro_batch);
  const std::int64_t b = r.batch, H = r.hidden, W = r.width;
  const float* w_ih = params_ + s.params.offset;
  const float* w_hh = w_ih + r.w_hh();
  const float* b_ih = w_ih + r.b_ih();
  const float* b_hh = w_ih + r.b_hh();
  float* saved = s.aux1[k];
  float* scratch = s.aux2[k];
  float* zeros = scratch + r.zeros();
  backend_.Fill(zeros, b * H, 0.0f);
  // (b, S, I) -> (S, b, I): SplitHeads with one "sample" of b rows of S heads.
  backend_.SplitHeads(1, b, r.steps, r.in, InputAct(v, 0, slot), saved + r.x(), false);
  for (std::int64_t t = 0; t < r.steps; ++t) {
    const float* h_prev = t == 0 ? zeros : saved + r.h() + (t - 1) * b * H;
    const float* c_prev = t == 0 ? zeros : saved + r.c() + (t - 1) * b * H;
    float* gx = scratch + r.gx();
    float* gh = saved + r.gh() + t * b * W;
    backend_.Gemm(false, true, b, W, r.in, 1.0f, saved + r.x() + t * b * r.in, w_ih, 0.0f, gx);
    backend_.AddBias(gx, b_ih, b, W);
    backend_.Gemm(false, true, b, W, H, 1.0f, h_prev, w_hh, 0.0f, gh);
    backend_.AddBias(gh, b_hh, b, W);
    backend_.RnnCellForward(op.attrs.cell, b, H, gx, gh, h_prev, c_prev, saved + r.h() + t * b * H,
                            saved + r.c() + t * b * H, saved + r.act() + t * b * W);
  }
  // (S, b, H) -> (b, S, H).
  backend_.MergeHeads(1, b, r.steps, H, saved + r.h(), s.act[k], false);
}

void ModelRuntime::RecurrentBackward(models::OpId v, int slot) {
  const models::Op& op = graph_.op(v);
  OpState& s = *ops_[v];
  const auto k = static_cast<std::size_t>(slot);
  const runtime_util::RecurrentBuffers r(op, options_.micro_batch);
  const std::int64_t b = r.batch, H = r.hidden, W = r.width;
  const float* w_ih = params_ + s.params.offset;
  const float* w_hh = w_ih + r.w_hh();
  float* dw_ih = grads_ + s.params.offset;
  float* dw_hh = dw_ih + r.w_hh();
  float* db_ih = dw_ih + r.b_ih();
  float* db_hh = dw_ih + r.b_hh();
  const float* saved = s.aux1[k];
  float* scratch = s.aux2[k];
  const float* zeros = scratch + r.zeros();
  float* dh = scratch + r.dh();
  float* carry = scratch + r.dh_carry();
  float* dc = scratch + r.dc();
  float* dgx = scratch + r.dgx();
  float* dgh = scratch + r.dgh();
  backend_.SplitHeads(1, b, r.steps, H, s.grad[k], scratch + r.dy(), false);
  backend_.Fill(carry, b * H, 0.0f);
  backend_.Fill(dc, b * H, 0.0f);
  for (std::int64_t t = r.steps; t-- > 0;) {
    const float* h_prev = t == 0 ? zeros : saved + r.h() + (t - 1) * b * H;
    const float* c_prev = t == 0 ? zeros : saved + r.c() + (t - 1) * b * H;
    const float* x_t = saved + r.x() + t * b * r.in;
    // dh: the output's gradient at t plus what step t + 1 sent back.
    backend_.Add(b * H, scratch + r.dy() + t * b * H, carry, dh);
    backend_.Fill(carry, b * H, 0.0f);
    backend_.RnnCellBackward(op.attrs.cell, b, H, saved + r.gh() + t * b * W, h_prev, c_prev,
                             saved + r.c() + t * b * H, saved + r.act() + t * b * W, dh, dc, dgx,
                             dgh, carry);
    backend_.Gemm(true, false, W, r.in, b, 1.0f, dgx, x_t, 1.0f, dw_ih);
    backend_.BiasGrad(dgx, b, W, db_ih);
    backend_.Gemm(true, false, W, H, b, 1.0f, dgh, h_prev, 1.0f, dw_hh);
    backend_.BiasGrad(dgh, b, W, db_hh);
    backend_.Gemm(false, false, b, r.in, W, 1.0f, dgx, w_ih, 0.0f, scratch + r.dx() + t * b * r.in);
    backend_.Gemm(false, false, b, H, W, 1.0f, dgh, w_hh, 1.0f, carry);
  }
  if (float* dx = InputGrad(v, 0, slot))
    backend_.MergeHeads(1, b, r.steps, r.in, scratch + r.dx(), dx, true);
}

}  // namespace dtsim::exec
