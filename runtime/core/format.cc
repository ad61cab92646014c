#include "format.hpp"

#include <cstdio>
#include <vector>

namespace mscclpp {

std::string strFormatV(const char* fmt, va_list args) {
  char stackBuf[512];
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(stackBuf, sizeof(stackBuf), fmt, copy);
  va_end(copy);
  if (n < 0) return std::string(fmt);
  if (static_cast<size_t>(n) < sizeof(stackBuf)) return std::string(stackBuf, n);
  std::vector<char> heapBuf(static_cast<size_t>(n) + 1);
  std::vsnprintf(heapBuf.data(), heapBuf.size(), fmt, args);
  return std::string(heapBuf.data(), n);
}

std::string strFormat(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = strFormatV(fmt, args);
  va_end(args);
  return s;
}

std::string formatBytes(unsigned long long bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return strFormat("%llu B", bytes);
  if (value == static_cast<double>(static_cast<unsigned long long>(value)))
    return strFormat("%.0f %s", value, units[unit]);
  return strFormat("%.1f %s", value, units[unit]);
}

}  // namespace mscclpp
