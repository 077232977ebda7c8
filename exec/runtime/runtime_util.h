// Small helpers shared by exec/runtime's files (not part of its API).
#pragma once

#include <chrono>
#include <cstdint>

#include <optional>

#include "exec/backend.h"
#include "models/op.h"

namespace dtsim::exec::runtime_util {

// Product of dimensions [from, to) of `s` (to clamped to its rank); 1 when
// empty. Per-sample element counts of a tensor's leading or trailing part.
inline std::int64_t Product(const models::Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

inline std::int64_t Elements(const models::Shape& s) { return Product(s, 0, s.size()); }

// A Mul op's a (rows x cols per sample) and how its b is broadcast over
// it: b of a's shape, or equal to a on a leading part of the dimensions and
// 1 on the rest (one value per row), or 1 on a leading part and equal on
// the rest (one per column). Other broadcasts: nullopt.
struct MulLayout {
  MulBroadcast broadcast = MulBroadcast::kNone;
  std::int64_t rows = 1, cols = 1;  // per sample
};
inline std::optional<MulLayout> MulLayoutOf(const models::Op& op) {
  const models::Shape& a = op.input_shapes[0];
  const models::Shape& b = op.input_shapes[1];
  if (a.size() != b.size()) return std::nullopt;
  if (a == b) return MulLayout{MulBroadcast::kNone, 1, Elements(a)};
  for (std::size_t k = 0; k <= a.size(); ++k) {
    bool per_row = true, per_column = true;
    for (std::size_t i = 0; i < a.size(); ++i) {
      per_row = per_row && (i < k ? b[i] == a[i] : b[i] == 1);
      per_column = per_column && (i < k ? b[i] == 1 : b[i] == a[i]);
    }
    if (per_row) return MulLayout{MulBroadcast::kPerRow, Product(a, 0, k), Product(a, k, a.size())};
    if (per_column)
      return MulLayout{MulBroadcast::kPerColumn, Product(a, 0, k), Product(a, k, a.size())};
  }
  return std::nullopt;
}

// A recurrent op's buffers for `b` samples, time-major (step t's rows of
// every sample together): what forward keeps for backward (saved: the
// input, h W_hh^T + b_hh and the activated gates of every step, the hidden
// and cell states) and the scratch both passes use.
struct RecurrentBuffers {
  std::int64_t steps, batch, in, hidden, width;  // width = gates x hidden
  explicit RecurrentBuffers(const models::Op& op, std::int64_t b)
      : steps(op.input_shapes[0][0]), batch(b), in(op.input_shapes[0][1]),
        hidden(op.output_shape[1]), width(models::RnnGates(op.attrs.cell) * op.output_shape[1]) {}
  // The op's parameters, in order: W_ih (W x I), W_hh (W x H), b_ih, b_hh
  // (W each), PyTorch's layout: offsets from the first.
  std::int64_t w_hh() const { return width * in; }
  std::int64_t b_ih() const { return w_hh() + width * hidden; }
  std::int64_t b_hh() const { return b_ih() + width; }
  // Saved, in order: x (S b I), gh (S b W), act (S b W), h (S b H), c (S b H).
  std::int64_t x() const { return 0; }
  std::int64_t gh() const { return steps * batch * in; }
  std::int64_t act() const { return gh() + steps * batch * width; }
  std::int64_t h() const { return act() + steps * batch * width; }
  std::int64_t c() const { return h() + steps * batch * hidden; }
  std::int64_t saved() const { return c() + steps * batch * hidden; }
  // Scratch, in order: gx (b W), zeros (b H), dy and dx time-major (S b H,
  // S b I), dh, dh_carry, dc (b H each), dgx, dgh (b W each).
  std::int64_t gx() const { return 0; }
  std::int64_t zeros() const { return batch * width; }
  std::int64_t dy() const { return zeros() + batch * hidden; }
  std::int64_t dx() const { return dy() + steps * batch * hidden; }
  std::int64_t dh() const { return dx() + steps * batch * in; }
  std::int64_t dh_carry() const { return dh() + batch * hidden; }
  std::int64_t dc() const { return dh_carry() + batch * hidden; }
  std::int64_t dgx() const { return dc() + batch * hidden; }
  std::int64_t dgh() const { return dgx() + batch * width; }
  std::int64_t scratch() const { return dgh() + batch * width; }
};

using Clock = std::chrono::steady_clock;

// Wall seconds from a to b.
inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace dtsim::exec::runtime_util
