// The parameter table, its parsers and the accessors of core/params.def.
#include "core/params.hpp"

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/enforce.hpp"

namespace mscclpp::params {
namespace {

// The table: one descriptor a row of params.def.
#define MSCCLPP_PARAM_ROW(owner, type, typeName, parse, accessor, env, def, doc) \
  const ParamDescriptor k_##accessor{env, typeName, def, doc, #owner};
#include "core/params.def"
#undef MSCCLPP_PARAM_ROW

const ParamDescriptor* const kTable[] = {
#define MSCCLPP_PARAM_ROW(owner, type, typeName, parse, accessor, env, def, doc) &k_##accessor,
#include "core/params.def"
#undef MSCCLPP_PARAM_ROW
};

std::atomic<uint64_t> generationCounter{1};

const char* envOrNull(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

const char* valueOrDefault(const ParamDescriptor& p) {
  const char* v = envOrNull(p.envName);
  return v ? v : p.defaultValue;
}

[[noreturn]] void badValue(const ParamDescriptor& p, const char* value, const char* expected) {
  MSCCLPP_THROW(ErrorCode::InvalidArgument, "%s='%s' is not valid: expected %s (default %s)", p.envName, value,
                expected, p.defaultValue);
}

bool parseBoolText(const ParamDescriptor& p, const char* text) {
  static const char* truthy[] = {"1", "true", "yes", "on"};
  static const char* falsy[] = {"0", "false", "no", "off"};
  for (const char* t : truthy)
    if (strcasecmp(text, t) == 0) return true;
  for (const char* f : falsy)
    if (strcasecmp(text, f) == 0) return false;
  badValue(p, text, "a boolean (1/0, true/false, yes/no, on/off)");
}

int64_t parseIntText(const ParamDescriptor& p, const char* text) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0') badValue(p, text, "an integer");
  return static_cast<int64_t>(v);
}

double parseDoubleText(const ParamDescriptor& p, const char* text) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || v != v) badValue(p, text, "a number");
  return v;
}

std::string parseChoiceText(const ParamDescriptor& p, const char* text) {
  const char* choices = p.typeName;
  while (*choices) {
    const char* bar = std::strchr(choices, '|');
    size_t len = bar ? static_cast<size_t>(bar - choices) : std::strlen(choices);
    if (std::strlen(text) == len && strncasecmp(text, choices, len) == 0) return std::string(choices, len);
    if (!bar) break;
    choices = bar + 1;
  }
  badValue(p, text, strFormat("one of %s", p.typeName).c_str());
}

}  // namespace

std::vector<ParamDescriptor> allParams() {
  std::vector<ParamDescriptor> out;
  for (const ParamDescriptor* p : kTable) out.push_back(*p);
  // By owner, keeping each layer's own order.
  std::stable_sort(out.begin(), out.end(), [](const ParamDescriptor& a, const ParamDescriptor& b) {
    return std::strcmp(a.owner, b.owner) < 0;
  });
  return out;
}

bool parseBool(const ParamDescriptor& p) { return parseBoolText(p, valueOrDefault(p)); }
int64_t parseInt(const ParamDescriptor& p) { return parseIntText(p, valueOrDefault(p)); }
double parseDouble(const ParamDescriptor& p) { return parseDoubleText(p, valueOrDefault(p)); }
std::string parseString(const ParamDescriptor& p) { return std::string(valueOrDefault(p)); }
std::string parseChoice(const ParamDescriptor& p) { return parseChoiceText(p, valueOrDefault(p)); }

uint64_t cacheGeneration() { return generationCounter.load(std::memory_order_acquire); }

void resetCache() { generationCounter.fetch_add(1, std::memory_order_acq_rel); }

const char* rawValue(const ParamDescriptor& param) { return envOrNull(param.envName); }

void checkValue(const ParamDescriptor& param) {
  const char* v = envOrNull(param.envName);
  if (v == nullptr) return;
  std::string type = param.typeName;
  if (type == "bool") {
    parseBoolText(param, v);
  } else if (type == "int") {
    parseIntText(param, v);
  } else if (type == "double") {
    parseDoubleText(param, v);
  } else if (type != "string" && type != "secret") {
    parseChoiceText(param, v);
  }
}

// The accessors, each with its own cache.
#define MSCCLPP_PARAM_ROW(owner, type, typeName, parse, accessor, env, def, doc) \
  type accessor() {                                                              \
    static Cached<type> cache;                                                   \
    return cache.get(k_##accessor, parse);                                       \
  }
#include "core/params.def"
#undef MSCCLPP_PARAM_ROW
}  // namespace mscclpp::params
