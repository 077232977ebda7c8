// Facts about this machine and moment that measurement files record: the
// date, the host name and a description of the device measured.
#pragma once

#include <string>

namespace dtsim::tools {

// Now, ISO 8601 in UTC: "2025-01-31T12:00:00Z".
std::string UtcNow();
// This machine's host name, or "unknown".
std::string HostName();
// "cpu-avx2 (Intel(R) Xeon(R) CPU @ 2.20GHz)": `backend` and the CPU's
// model name from /proc/cpuinfo when there is one; else `backend`.
std::string DeviceDescription(const std::string& backend);

}  // namespace dtsim::tools
