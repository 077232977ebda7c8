// HardwareCatalog: storage, lookup and validation. The built-in tables live in
// hw/gpus.cc and hw/links.cc.
#include "hw/catalog.h"

#include <cctype>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "hw/catalog_internal.h"

namespace dtsim::hw {

namespace internal {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace internal

namespace {

using internal::EqualsIgnoreCase;

// The key each kind of entry is found by.
std::string_view NameOf(const DeviceSpec& d) { return d.name; }
std::string_view NameOf(const LinkSpec& l) { return l.name; }
std::string_view NameOf(const HardwareCatalog::Alias& a) { return a.alias; }

// Index of the entry whose key is `name` (ignoring case), or -1.
template <typename Entry>
int IndexOf(const std::vector<Entry>& entries, std::string_view name) {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (EqualsIgnoreCase(NameOf(entries[i]), name)) return static_cast<int>(i);
  }
  return -1;
}

// Looks up `name` among the entries' names first, then among the aliases.
template <typename Spec>
const Spec* Find(const std::vector<Spec>& specs, const std::vector<HardwareCatalog::Alias>& aliases,
                 std::string_view name) {
  int i = IndexOf(specs, name);
  if (i < 0) {
    int a = IndexOf(aliases, name);
    if (a >= 0) i = IndexOf(specs, aliases[a].target);
  }
  return i >= 0 ? &specs[i] : nullptr;
}

// Replaces the entry with the same key in place, or appends.
template <typename Entry>
void AddOrReplace(std::vector<Entry>* entries, Entry entry) {
  int i = IndexOf(*entries, NameOf(entry));
  if (i >= 0) {
    (*entries)[i] = std::move(entry);
  } else {
    entries->push_back(std::move(entry));
  }
}

// "" when `value` is finite and > 0 (or >= 0 when !positive), else a message.
std::string CheckNumber(const std::string& what, const std::string& name, const char* field,
                        double value, bool positive) {
  if (std::isfinite(value) && (positive ? value > 0 : value >= 0)) return "";
  return what + " '" + name + "': " + field + (positive ? " must be > 0" : " must be >= 0") +
         ", got " + std::to_string(value);
}

}  // namespace

std::string DeviceSpec::Problem() const {
  if (name.empty()) return "device with an empty name";
  if (kind != "gpu" && kind != "cpu") {
    return "device '" + name + "': kind must be \"gpu\" or \"cpu\", got \"" + kind + "\"";
  }
  const struct {
    const char* field;
    double value;
    bool positive;
  } fields[] = {{"fp32_flop_per_s", fp32_flop_per_s, true},
                {"tf32_flop_per_s", tf32_flop_per_s, false},
                {"fp16_flop_per_s", fp16_flop_per_s, false},
                {"bf16_flop_per_s", bf16_flop_per_s, false},
                {"fp8_flop_per_s", fp8_flop_per_s, false},
                {"memory_bytes", memory_bytes, true},
                {"memory_bw_bytes_per_s", memory_bw_bytes_per_s, true},
                {"l2_bytes", l2_bytes, false}};
  for (const auto& f : fields) {
    std::string problem = CheckNumber("device", name, f.field, f.value, f.positive);
    if (!problem.empty()) return problem;
  }
  if (sm_count < 0) return "device '" + name + "': sm_count must be >= 0";
  return "";
}

std::string LinkSpec::Problem() const {
  if (name.empty()) return "link with an empty name";
  std::string problem = CheckNumber("link", name, "bw_bytes_per_s", bw_bytes_per_s, true);
  if (problem.empty()) problem = CheckNumber("link", name, "latency_s", latency_s, false);
  return problem;
}

HardwareCatalog HardwareCatalog::BuiltIn() {
  HardwareCatalog catalog;
  internal::AddBuiltInGpus(&catalog);
  internal::AddBuiltInHostCpus(&catalog);
  internal::AddBuiltInLinks(&catalog);
  return catalog;
}

const DeviceSpec* HardwareCatalog::FindDevice(std::string_view name) const {
  return Find(devices_, device_aliases_, name);
}

const LinkSpec* HardwareCatalog::FindLink(std::string_view name) const {
  return Find(links_, link_aliases_, name);
}

void HardwareCatalog::AddDevice(DeviceSpec spec) {
  std::string problem = spec.Problem();
  DTSIM_CHECK(problem.empty(), problem);
  AddOrReplace(&devices_, std::move(spec));
}

void HardwareCatalog::AddLink(LinkSpec spec) {
  std::string problem = spec.Problem();
  DTSIM_CHECK(problem.empty(), problem);
  AddOrReplace(&links_, std::move(spec));
}

void HardwareCatalog::AddDeviceAlias(std::string alias, std::string target) {
  DTSIM_CHECK(!alias.empty(), "empty device alias for '" + target + "'");
  DTSIM_CHECK(IndexOf(devices_, target) >= 0,
              "device alias '" + alias + "' names no device: '" + target + "'");
  AddOrReplace(&device_aliases_, Alias{std::move(alias), std::move(target)});
}

void HardwareCatalog::AddLinkAlias(std::string alias, std::string target) {
  DTSIM_CHECK(!alias.empty(), "empty link alias for '" + target + "'");
  DTSIM_CHECK(IndexOf(links_, target) >= 0,
              "link alias '" + alias + "' names no link: '" + target + "'");
  AddOrReplace(&link_aliases_, Alias{std::move(alias), std::move(target)});
}

}  // namespace dtsim::hw
