// Readers of the `stragglers:` and `failures:` sections.
#include "config/section_readers.h"

namespace dtsim::config {

StragglerConfig ReadStragglers(const YamlValue& v) {
  v.AsMap({});
  return {};
}

FailureConfig ReadFailures(const YamlValue& v) {
  v.AsMap({});
  return {};
}

}  // namespace dtsim::config
