// What a fuzz target accepts as an answer (docs/fuzzing.md): the input loads,
// or it is refused with a UserError (exit status 2 or 3 in dtsim). Anything
// else is a bug and ends the process with the exception's text, which
// libFuzzer records as a crash with its input:
//  - InternalError (a DTSIM_CHECK failed),
//  - std::bad_alloc (a size that was not bounded before allocating),
//  - any other exception (an "internal error" exit 1 for a user mistake).
// Hangs, memory above the cap and sanitizer reports are caught by libFuzzer
// (-timeout, -rss_limit_mb) or by the replay driver (replay_main.cc).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "common/error.h"

namespace dtsim::fuzz {

template <typename Body>
void ExpectAnswerOrRefusal(Body&& body) {
  try {
    body();
  } catch (const UserError& e) {
    // Refused with a location: what a user mistake must give. Shown when
    // DTSIM_FUZZ_VERBOSE is set, to see what a corpus file tests.
    if (std::getenv("DTSIM_FUZZ_VERBOSE") != nullptr) {
      std::fprintf(stderr, "dtsim fuzz: refused: %s: %s\n", e.where().ToString().c_str(),
                   e.message().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtsim fuzz: not a UserError: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "dtsim fuzz: not a UserError: an exception of unknown type\n");
    std::abort();
  }
}

}  // namespace dtsim::fuzz
