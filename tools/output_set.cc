#include "tools/output_set.h"

namespace dtsim::tools {

void CloseOutput(OutputFile& f, const std::string& what) { f.Close(what); }

void WriteOutput(OutputSet& files, const std::string& name, const std::string& content) {
  auto f = files.Open(name);
  f << content;
  CloseOutput(f, name);
}

}  // namespace dtsim::tools
