#include "tools/host_facts.h"

#include <unistd.h>

#include <ctime>

#include "hw/local_cpu.h"

namespace dtsim::tools {

// "2025-01-31T12:00:00Z".
std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

// "cpu (Intel(R) Xeon(R) CPU @ 2.20GHz)": the backend and the CPU's model
// name from /proc/cpuinfo when there is one.
std::string DeviceDescription(const std::string& backend) {
  const hw::CpuProbe probe = hw::ProbeLocalCpu();
  if (!probe.cpuinfo) return backend;
  const std::string& text = *probe.cpuinfo;
  const std::size_t key = text.find("model name");
  if (key == std::string::npos) return backend;
  const std::size_t colon = text.find(':', key);
  const std::size_t end = text.find('\n', key);
  if (colon == std::string::npos || colon > end) return backend;
  std::string model = text.substr(colon + 1, end - colon - 1);
  model.erase(0, model.find_first_not_of(' '));
  std::string s = backend;
  s += " (";
  s += model;
  s += ")";
  return s;
}

}  // namespace dtsim::tools
