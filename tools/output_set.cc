#include "tools/output_set.h"

namespace dtsim::tools {

void CloseOutput(OutputFile& f, const std::string& what) { f.Close(what); }

}  // namespace dtsim::tools
