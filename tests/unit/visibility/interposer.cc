// A library that defines some of the runtime's internal C++ names with different behaviour, as
// another library in the same process might (upstream MSCCL++, a second copy of ours). Loaded
// first with RTLD_GLOBAL by test_visibility: if our libraries let it interpose, plans stop loading
// (planMaxBytes), names and messages come out wrong (collectiveName, strFormat), every wait times
// out (timeoutSeconds).
#include <cstdarg>
#include <cstdint>
#include <string>

namespace mscclpp {

std::string strFormat(const char*, ...) { return "interposed"; }

namespace params {
int64_t planMaxBytes() { return 1; }
double timeoutSeconds() { return 0.001; }
std::string backend() { return "cuda"; }
}  // namespace params

namespace plan {
enum class Collective : uint8_t;
const char* collectiveName(Collective) { return "interposed"; }
}  // namespace plan

}  // namespace mscclpp
