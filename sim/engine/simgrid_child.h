// Between RunSimgridEngine (sim/engine/simgrid_engine.cc, in dtsim) and the
// SimGrid module that its forked child loads (sim/engine/simgrid_child.cc,
// libdtsim-simgrid.so). Both come from the same build; no other code uses
// this header.
#pragma once

#include <cstddef>

#include "plan/plan.h"
#include "sim/engine/engine.h"
#include "sim/network/network.h"
#include "sim/engine/simgrid_engine.h"

namespace dtsim::sim {

// The module's one exported function: runs the plan and writes the result
// to `fd` as RunSimgridEngine reads it (status byte 0 ok, 1 user error, 2
// internal error; then the result or the error text). Never throws.
inline constexpr const char* kSimgridChildSymbol = "dtsim_simgrid_child_main";
using SimgridChildMain = void (*)(int fd, const plan::Plan& plan, const TaskCosts& costs,
                                  const NetworkSpec& spec, const SimgridOptions& options);

// Writes all of `data` to `fd`, or ends the (child) process with status 3.
void WriteAllOrExit(int fd, const void* data, std::size_t size);

}  // namespace dtsim::sim
