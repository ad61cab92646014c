// printf-style formatting into std::string, with compile-time format checking.
#ifndef MSCCLPP_CORE_FORMAT_HPP_
#define MSCCLPP_CORE_FORMAT_HPP_

#include <cstdarg>
#include <cstdint>
#include <string>

namespace mscclpp {

std::string strFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string strFormatV(const char* fmt, va_list args);

// A uint64_t as printf's %llu wants it, whatever uint64_t is on the platform.
inline unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

// Human-readable byte count: "512 B", "3 KiB", "1.5 MiB".
std::string formatBytes(unsigned long long bytes);

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_FORMAT_HPP_
