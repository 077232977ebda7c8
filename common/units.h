// Physical quantities with their units written out, as users type them in
// scenario and model files ("25Gbps", "5us", "16GiB", "125TFLOPS").
//
// Inside dtsim every quantity is held in one base unit, named in the variable:
// bytes, bytes_per_s, seconds (double) or ns (integer simulated time), flops and
// flop_per_s. Parsing converts to the base unit; formatting converts back for
// people.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace dtsim {

enum class Dimension {
  kBytes,      // base unit: byte.        B, KB, MB, GB, TB (1000^n), KiB, MiB, GiB, TiB (1024^n)
  kBandwidth,  // base unit: byte/s.      bps, Kbps, Mbps, Gbps, Tbps (bits); Bps, KBps, MBps, GBps,
               //                         TBps (bytes); also "GB/s", "Gb/s", "GiB/s" spellings
  kTime,       // base unit: second.      ns, us, ms, s, min, h
  kFlopRate,   // base unit: flop/s.      FLOPS, KFLOPS, MFLOPS, GFLOPS, TFLOPS, PFLOPS (or FLOP/s)
};

// Name of a dimension for messages ("bandwidth").
const char* DimensionName(Dimension dim);

// Parses a quantity with a unit and returns it in the base unit of `dim`.
// A bare 0 is accepted without unit; any other number without a unit, an
// unknown unit, a negative value or trailing garbage throws UserError at
// `where`, with a hint listing the accepted units.
double ParseQuantity(std::string_view text, Dimension dim, const SourceLocation& where = {});

// Human-readable forms, three significant digits: "25.6 MB", "12.5 GB/s",
// "1.25 ms", "5 min", "720 h", "312 TFLOP/s". Decimal prefixes throughout.
std::string FormatBytes(double bytes);
std::string FormatBandwidth(double bytes_per_s);
std::string FormatSeconds(double seconds);
std::string FormatFlopRate(double flop_per_s);
// "4.09 G" style count with decimal prefixes, for parameters and FLOPs.
std::string FormatCount(double count);

// Simulated time is an integer number of nanoseconds.
using SimTime = std::int64_t;
constexpr SimTime kNsPerSecond = 1'000'000'000;
inline double NsToSeconds(SimTime ns) { return static_cast<double>(ns) * 1e-9; }
// The longest simulated time dtsim represents: 2^62 ns, about 146 years,
// half the int64 range so that a sum of two times never wraps.
constexpr SimTime kMaxSimTime = SimTime{1} << 62;
// Rounds to the nearest nanosecond; REQUIRES: seconds >= 0. Throws UserError
// when the duration exceeds kMaxSimTime (a latency, launch cost or delay so
// large that the simulation's integer clock cannot hold it).
SimTime SecondsToNs(double seconds);
// a + b for simulated times, or UserError when the sum exceeds kMaxSimTime
// (the simulated run would last more than about 146 years).
// REQUIRES: a, b >= 0.
SimTime AddSimTime(SimTime a, SimTime b);

}  // namespace dtsim
