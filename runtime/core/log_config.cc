#include "log_config.hpp"

#include <strings.h>
#include <unistd.h>

#include <cstring>

#include "enforce.hpp"
#include "format.hpp"
#include "params.hpp"

namespace mscclpp {
namespace {

struct SubsysName {
  const char* name;
  uint32_t mask;
};

// Our subsystems, then NCCL 2.28's names mapped to the closest of ours.
// A list written for NCCL then selects the same kind of lines.
// PROFILE and RAS have no equivalent.
const SubsysName kSubsysNames[] = {
    {"INIT", LogInit},
    {"PLAN", LogPlan},
    {"EXEC", LogExec},
    {"BOOTSTRAP", LogBootstrap},
    {"TRANSPORT", LogTransport},
    {"PROXY", LogProxy},
    {"SHIM", LogShim},
    {"ENV", LogEnv},
    {"ALL", LogAll},
    {"COLL", LogShim | LogPlan | LogExec},  // a collective call: which plan ran, or why NCCL did
    {"P2P", LogShim | LogTransport},
    {"SHM", LogTransport},
    {"NET", LogTransport},
    {"NVLS", LogTransport},
    {"REG", LogTransport},
    {"GRAPH", LogPlan},
    {"TUNING", LogPlan},
    {"ALLOC", LogExec},
    {"ALLOC_HOST", LogExec},
    {"CALL", LogShim},
    {"DESTROY", LogInit | LogShim},
    {"PROFILE", 0},
    {"RAS", 0},
};

const char* const kLevelNames[] = {"NONE", "VERSION", "WARN", "INFO", "ABORT", "TRACE"};
const char* const kLevelChoices = "NONE|VERSION|WARN|INFO|ABORT|TRACE";

std::string subsystemChoices() {
  std::string list;
  for (const auto& s : kSubsysNames) list += std::string(list.empty() ? "" : ",") + s.name;
  return list;
}

// Returns false and sets *unknown at an unknown name.
bool subsystemMask(const std::string& list, uint32_t* mask, std::string* unknown) {
  std::string text = list;
  bool invert = false;
  if (!text.empty() && text[0] == '^') {
    invert = true;
    text = text.substr(1);
  }
  uint32_t bits = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t b = name.find_first_not_of(" \t"), e = name.find_last_not_of(" \t");
    name = b == std::string::npos ? "" : name.substr(b, e - b + 1);
    if (!name.empty()) {
      bool found = false;
      for (const auto& s : kSubsysNames) {
        if (strcasecmp(name.c_str(), s.name) == 0) {
          bits |= s.mask;
          found = true;
        }
      }
      if (!found) {
        *unknown = name;
        return false;
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *mask = invert ? ~bits : bits;
  return true;
}

// The variable that gives a setting: ours when set, else NCCL's, else "".
struct Chosen {
  const char* env = "";
  std::string value;
};
Chosen choose(const char* ours, const std::string& oursValue, const char* nccls, const std::string& ncclsValue) {
  if (!oursValue.empty()) return {ours, oursValue};
  if (!ncclsValue.empty()) return {nccls, ncclsValue};
  return {};
}

}  // namespace

bool parseLogLevel(const std::string& name, LogLevel* level) {
  for (int i = 0; i < static_cast<int>(sizeof(kLevelNames) / sizeof(kLevelNames[0])); ++i) {
    if (strcasecmp(name.c_str(), kLevelNames[i]) == 0) {
      *level = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

uint32_t parseSubsystemMask(const std::string& list) {
  uint32_t mask = 0;
  std::string unknown;
  MSCCLPP_ENFORCE(subsystemMask(list, &mask, &unknown), ErrorCode::InvalidArgument,
                  "unknown subsystem '%s' in '%s' (accepted: a comma list of %s; a leading ^ inverts)", unknown.c_str(),
                  list.c_str(), subsystemChoices().c_str());
  return mask;
}

LogConfig logConfigFromEnvironment() {
  LogConfig config;
  const Chosen level = choose("MSCCLPP_DEBUG", params::debugLevel(), "NCCL_DEBUG", params::ncclDebugLevel());
  if (!level.value.empty() && !parseLogLevel(level.value, &config.level)) {
    MSCCLPP_THROW(ErrorCode::InvalidArgument, "%s='%s' is not valid: expected one of %s (default NONE)", level.env,
                  level.value.c_str(), kLevelChoices);
  }
  const Chosen subsys =
      choose("MSCCLPP_DEBUG_SUBSYS", params::debugSubsystems(), "NCCL_DEBUG_SUBSYS", params::ncclDebugSubsystems());
  std::string unknown;
  if (!subsys.value.empty() && !subsystemMask(subsys.value, &config.subsysMask, &unknown)) {
    MSCCLPP_THROW(ErrorCode::InvalidArgument,
                  "%s='%s' is not valid: unknown subsystem '%s' (expected a comma list of %s; a leading ^ inverts; "
                  "default ALL)",
                  subsys.env, subsys.value.c_str(), unknown.c_str(), subsystemChoices().c_str());
  }
  config.filePattern =
      choose("MSCCLPP_DEBUG_FILE", params::debugFile(), "NCCL_DEBUG_FILE", params::ncclDebugFile()).value;
  return config;
}

const std::string& logHostName() {
  static const std::string host = [] {
    char buf[256] = {0};
    if (gethostname(buf, sizeof(buf) - 1) != 0) return std::string("unknown-host");
    // The short name, as NCCL prints, keeps lines readable.
    char* dot = std::strchr(buf, '.');
    if (dot) *dot = '\0';
    return std::string(buf);
  }();
  return host;
}

std::string expandLogFileName(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[i + 1];
      if (c == 'h' || c == 'p' || c == '%') {
        if (c == 'h') {
          // A '/' or '%' would change the path; NCCL writes '-' too.
          for (char ch : logHostName()) out.push_back(ch == '/' || ch == '%' ? '-' : ch);
        } else {
          out += c == 'p' ? std::to_string(getpid()) : "%";
        }
        ++i;
        continue;
      }
    }
    out.push_back(pattern[i]);  // anything else is kept as written, as in NCCL
  }
  return out;
}

}  // namespace mscclpp
