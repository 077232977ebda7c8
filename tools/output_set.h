// The files one command writes into an output folder, written all or
// nothing (common/atomic_file.h says how, and what a reader sees).
#pragma once

#include <string>

#include "common/atomic_file.h"

namespace dtsim::tools {

using OutputSet = AtomicFileSet;

// Closes `f` (flush, fsync) and throws UserError naming `what` if anything
// failed to be written (disk full, I/O error).
void CloseOutput(OutputFile& f, const std::string& what);

// Opens `name` in `files`, writes `content` and closes it (CloseOutput).
void WriteOutput(OutputSet& files, const std::string& name, const std::string& content);

}  // namespace dtsim::tools
