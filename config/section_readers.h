// Readers of scenario sections that live in their own files (internal to
// config/). Each throws UserError at the offending key or value.
#pragma once

#include "common/yaml_reader.h"
#include "config/scenario.h"

namespace dtsim::config {

// `stragglers:` section (config/straggler_loader.cc).
StragglerConfig ReadStragglers(const YamlValue& v);
// `failures:` section (config/straggler_loader.cc).
FailureConfig ReadFailures(const YamlValue& v);

// `link_events:` section (config/link_event_loader.cc), checked against the
// cluster it names links of.
std::vector<LinkEvent> ReadLinkEvents(const YamlValue& v, const ClusterConfig& cluster);

}  // namespace dtsim::config
