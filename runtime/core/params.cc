#include "core/params.hpp"

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/enforce.hpp"

namespace mscclpp::params {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<ParamDescriptor> params;  // in registration order
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: registrations run during static init
  return *r;
}

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

Registration::Registration(const ParamDescriptor* table, size_t count) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.params.insert(r.params.end(), table, table + count);
}

std::vector<ParamDescriptor> allParams() {
  Registry& r = registry();
  std::vector<ParamDescriptor> out;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    out = r.params;
  }
  // Registration order depends on link order: sort by owner, keeping each layer's own order.
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
  } else if (type != "string") {
    parseChoiceText(param, v);
  }
}

}  // namespace mscclpp::params

#define MSCCLPP_PARAMS_DEF "core/params_core.def"
#define MSCCLPP_PARAMS_OWNER "core"
#include "core/params_define.inc"
