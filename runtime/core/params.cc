#include "params.hpp"

#include <strings.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "enforce.hpp"

namespace mscclpp::params {
namespace {

const char* envOrNull(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

[[noreturn]] void badValue(const char* env, const char* value, const char* expected, const char* def) {
  MSCCLPP_THROW(ErrorCode::InvalidArgument, "%s='%s' is not valid: expected %s (default %s)", env, value, expected, def);
}

bool parseBool(const char* env, const char* text, const char* def) {
  static const char* truthy[] = {"1", "true", "yes", "on"};
  static const char* falsy[] = {"0", "false", "no", "off"};
  for (const char* t : truthy)
    if (strcasecmp(text, t) == 0) return true;
  for (const char* f : falsy)
    if (strcasecmp(text, f) == 0) return false;
  badValue(env, text, "a boolean (1/0, true/false, yes/no, on/off)", def);
}

int64_t parseInt(const char* env, const char* text, const char* def) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0') badValue(env, text, "an integer", def);
  return static_cast<int64_t>(v);
}

double parseDouble(const char* env, const char* text, const char* def) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || v != v) badValue(env, text, "a number", def);
  return v;
}

std::string parseChoice(const char* env, const char* text, const char* choices, const char* def) {
  const char* p = choices;
  while (*p) {
    const char* bar = std::strchr(p, '|');
    size_t len = bar ? static_cast<size_t>(bar - p) : std::strlen(p);
    if (std::strlen(text) == len && strncasecmp(text, p, len) == 0) return std::string(p, len);
    if (!bar) break;
    p = bar + 1;
  }
  badValue(env, text, strFormat("one of %s", choices).c_str(), def);
}

}  // namespace

#define MSCCLPP_PARAM_BOOL(accessor, env, def, doc) \
  bool accessor() {                                 \
    const char* v = envOrNull(env);                 \
    return parseBool(env, v ? v : def, def);        \
  }
#define MSCCLPP_PARAM_INT(accessor, env, def, doc) \
  int64_t accessor() {                             \
    const char* v = envOrNull(env);                \
    return parseInt(env, v ? v : def, def);        \
  }
#define MSCCLPP_PARAM_DOUBLE(accessor, env, def, doc) \
  double accessor() {                                 \
    const char* v = envOrNull(env);                   \
    return parseDouble(env, v ? v : def, def);        \
  }
#define MSCCLPP_PARAM_STRING(accessor, env, def, doc) \
  std::string accessor() {                            \
    const char* v = envOrNull(env);                   \
    return std::string(v ? v : def);                  \
  }
#define MSCCLPP_PARAM_CHOICE(accessor, env, def, choices, doc) \
  std::string accessor() {                                     \
    const char* v = envOrNull(env);                            \
    return parseChoice(env, v ? v : def, choices, def);        \
  }
#include "params_list.def"
#undef MSCCLPP_PARAM_BOOL
#undef MSCCLPP_PARAM_INT
#undef MSCCLPP_PARAM_DOUBLE
#undef MSCCLPP_PARAM_STRING
#undef MSCCLPP_PARAM_CHOICE

const std::vector<ParamDescriptor>& allParams() {
  static const std::vector<ParamDescriptor> table = {
#define MSCCLPP_PARAM_BOOL(accessor, env, def, doc) {env, "bool", def, doc},
#define MSCCLPP_PARAM_INT(accessor, env, def, doc) {env, "int", def, doc},
#define MSCCLPP_PARAM_DOUBLE(accessor, env, def, doc) {env, "double", def, doc},
#define MSCCLPP_PARAM_STRING(accessor, env, def, doc) {env, "string", def, doc},
#define MSCCLPP_PARAM_CHOICE(accessor, env, def, choices, doc) {env, choices, def, doc},
#include "params_list.def"
#undef MSCCLPP_PARAM_BOOL
#undef MSCCLPP_PARAM_INT
#undef MSCCLPP_PARAM_DOUBLE
#undef MSCCLPP_PARAM_STRING
#undef MSCCLPP_PARAM_CHOICE
  };
  return table;
}

const char* rawValue(const ParamDescriptor& param) { return envOrNull(param.envName); }

void checkValue(const ParamDescriptor& param) {
  const char* v = envOrNull(param.envName);
  if (v == nullptr) return;
  std::string type = param.typeName;
  if (type == "bool") {
    parseBool(param.envName, v, param.defaultValue);
  } else if (type == "int") {
    parseInt(param.envName, v, param.defaultValue);
  } else if (type == "double") {
    parseDouble(param.envName, v, param.defaultValue);
  } else if (type != "string") {
    parseChoice(param.envName, v, param.typeName, param.defaultValue);
  }
}

}  // namespace mscclpp::params
