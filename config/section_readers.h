// Readers of scenario sections that live in their own files (internal to
// config/). Each throws UserError at the offending key or value.
#pragma once

#include <optional>
#include <string>

#include "common/yaml_reader.h"
#include "hw/catalog.h"
#include "config/scenario.h"

namespace dtsim::config {

// `stragglers:` section (config/straggler_loader.cc).
StragglerConfig ReadStragglers(const YamlValue& v);
// `failures:` section (config/straggler_loader.cc).
FailureConfig ReadFailures(const YamlValue& v);

// The canonical spelling of a device or link name in `catalog`, or an error
// at `v` listing the known ones (config/scenario_loader.cc).
std::string ResolveDevice(const YamlValue& v, const hw::HardwareCatalog& catalog);
std::string ResolveLink(const YamlValue& v, const hw::HardwareCatalog& catalog);

// `cluster.node_groups:` (config/node_group_loader.cc) into `cluster`, whose
// other keys are read (they are the groups' defaults); `nodes` is the
// cluster's own `nodes` key when given (exclusive with the groups).
void ReadNodeGroups(const YamlValue& v, const std::optional<YamlValue>& nodes,
                    const hw::HardwareCatalog& catalog, ClusterConfig* cluster);

// `link_events:` section (config/link_event_loader.cc), checked against the
// cluster it names links of.
std::vector<LinkEvent> ReadLinkEvents(const YamlValue& v, const ClusterConfig& cluster);

}  // namespace dtsim::config
