// Internal to hw/: pieces shared by the catalog's source files.
#pragma once

#include <string_view>

#include "hw/catalog.h"

namespace dtsim::hw::internal {

// ASCII case-insensitive equality (catalog names are ASCII).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Add the built-in entries and their aliases to `catalog`.
void AddBuiltInGpus(HardwareCatalog* catalog);   // hw/gpus.cc
void AddBuiltInHostCpus(HardwareCatalog* catalog);  // hw/host_cpus.cc
void AddBuiltInLinks(HardwareCatalog* catalog);  // hw/links.cc

}  // namespace dtsim::hw::internal
