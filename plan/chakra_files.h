// Chakra trace files on disk: one per rank, PREFIX.<rank>.et (Chakra's
// naming), each also accepted gzip-compressed as PREFIX.<rank>.et.gz.
#pragma once

#include <string>
#include <vector>

#include "plan/chakra_import.h"

namespace dtsim::plan {

// The traces PREFIX.0.et, PREFIX.1.et, ..., in rank order, their bytes
// decompressed. The rank files must run from 0 without a gap and, when
// `ranks` > 0, be exactly `ranks` (one per device of the cluster; 0 = as
// many as there are). Throws UserError naming the first missing file, the
// first file beyond `ranks`, a rank given both as .et and .et.gz, or a
// file that cannot be read; and when there is no PREFIX.<r>.et at all.
std::vector<ChakraTrace> ReadChakraTraces(const std::string& prefix, int ranks = 0);

}  // namespace dtsim::plan
