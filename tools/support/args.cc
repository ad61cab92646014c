#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>

#ifndef MSCCLPP_VERSION_STRING
#error "MSCCLPP_VERSION_STRING comes from the project's meson.build"
#endif

namespace mscclpp::tools {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Reads all leading decimal digits of text from *pos into *value, so
// *pos ends after the number. False when it does not fit in uint64_t.
bool readDigits(const std::string& text, size_t* pos, uint64_t* value) {
  *value = 0;
  bool fits = true;
  for (; *pos < text.size() && isDigit(text[*pos]); ++*pos) {
    const uint64_t digit = static_cast<uint64_t>(text[*pos] - '0');
    if (*value > (UINT64_MAX - digit) / 10) fits = false;
    if (fits) *value = *value * 10 + digit;
  }
  return fits;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  std::stringstream in(text);
  while (std::getline(in, item, ',')) items.push_back(item);
  if (!text.empty() && text.back() == ',') items.push_back("");
  return items;
}

}  // namespace

bool parseInteger(const std::string& text, int64_t min, int64_t max, int64_t* out, std::string* error) {
  if (text.empty()) {
    *error = "empty, expected an integer";
    return false;
  }
  const bool negative = text[0] == '-';
  size_t pos = negative ? 1 : 0;
  if (negative && min >= 0) {
    *error = "must not be negative";
    return false;
  }
  if (pos >= text.size() || !isDigit(text[pos])) {
    *error = "not an integer";
    return false;
  }
  uint64_t magnitude = 0;
  const bool fits = readDigits(text, &pos, &magnitude);
  if (pos != text.size()) {
    *error = "not an integer (trailing " + quoted(text.substr(pos)) + ")";
    return false;
  }
  // Beyond int64_t is beyond every range an option
  // can have: report it as the range's end.
  const uint64_t limit = negative ? static_cast<uint64_t>(INT64_MAX) + 1 : static_cast<uint64_t>(INT64_MAX);
  if (!fits || magnitude > limit) {
    *error = negative ? "below the smallest allowed value, " + std::to_string(min)
                      : "above the largest allowed value, " + std::to_string(max);
    return false;
  }
  const int64_t value = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  if (value < min) {
    *error = "below the smallest allowed value, " + std::to_string(min);
    return false;
  }
  if (value > max) {
    *error = "above the largest allowed value, " + std::to_string(max);
    return false;
  }
  *out = value;
  return true;
}

bool parseSize(const std::string& text, uint64_t* out, std::string* error) {
  static const char* kSyntax =
      "a byte count is a whole number with an optional unit K, M, G or T (binary: 4K = 4096), "
      "alone or followed by B or iB: 1024, 4K, 1MiB, 2G";
  if (text.empty()) {
    *error = std::string("empty; ") + kSyntax;
    return false;
  }
  if (text[0] == '-') {
    *error = "must not be negative";
    return false;
  }
  size_t pos = 0;
  uint64_t value = 0;
  const bool fits = readDigits(text, &pos, &value);
  if (pos == 0) {
    *error = std::string("not a byte count; ") + kSyntax;
    return false;
  }
  if (pos < text.size() && text[pos] == '.') {
    *error = std::string("not a whole number of bytes; ") + kSyntax;
    return false;
  }
  const std::string unit = text.substr(pos);
  int shift = 0;
  if (!unit.empty() && unit != "B") {
    const char u = unit[0];
    shift = (u == 'K' || u == 'k')   ? 10
            : (u == 'M' || u == 'm') ? 20
            : (u == 'G' || u == 'g') ? 30
            : (u == 'T' || u == 't') ? 40
                                     : -1;
    const std::string rest = unit.substr(1);
    if (shift < 0 || !(rest.empty() || rest == "B" || rest == "iB")) {
      *error = "unknown unit " + quoted(unit) + "; " + kSyntax;
      return false;
    }
  }
  if (!fits || (shift > 0 && value > (UINT64_MAX >> shift))) {
    *error = "too large: more than 2^64 - 1 bytes";
    return false;
  }
  *out = value << shift;
  return true;
}

bool parseReal(const std::string& text, double min, double max, double* out, std::string* error) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) {
    *error = "not a number";
    return false;
  }
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) {
    *error = "not a number";
    return false;
  }
  if (*end != '\0') {
    *error = "not a number (trailing " + quoted(end) + ")";
    return false;
  }
  if (errno == ERANGE || !std::isfinite(v)) {
    *error = "out of range";
    return false;
  }
  if (v < min || v > max) {
    std::ostringstream s;
    s << "not in [" << min << ", " << max << "]";
    *error = s.str();
    return false;
  }
  *out = v;
  return true;
}

std::string versionLine(const std::string& program) { return program + " (MSCCL++) " MSCCLPP_VERSION_STRING; }

ArgParser::ArgParser(std::string program, std::string usage) : program_(std::move(program)), usage_(std::move(usage)) {
  if (!usage_.empty() && usage_.back() != '\n') usage_ += '\n';
}

ArgParser& ArgParser::add(Option option) {
  options_.push_back(std::move(option));
  return *this;
}

ArgParser& ArgParser::flag(const std::string& name, bool* target) {
  Option o;
  o.name = name;
  o.takesValue = false;
  o.flag = target;
  return add(std::move(o));
}

ArgParser& ArgParser::custom(const std::string& name, std::function<bool(const std::string&, std::string*)> set) {
  Option o;
  o.name = name;
  o.takesValue = true;
  o.set = std::move(set);
  return add(std::move(o));
}

ArgParser& ArgParser::size(const std::string& name, uint64_t* target, uint64_t min, uint64_t max) {
  return custom(name, [target, min, max](const std::string& v, std::string* error) {
    uint64_t parsed = 0;
    if (!parseSize(v, &parsed, error)) return false;
    if (parsed < min || parsed > max) {
      *error = parsed < min ? "below the smallest allowed size, " + std::to_string(min) + " bytes"
                            : "above the largest allowed size, " + std::to_string(max) + " bytes";
      return false;
    }
    *target = parsed;
    return true;
  });
}

ArgParser& ArgParser::real(const std::string& name, double* target, double min, double max) {
  return custom(name, [target, min, max](const std::string& v, std::string* error) {
    return parseReal(v, min, max, target, error);
  });
}

ArgParser& ArgParser::text(const std::string& name, std::string* target) {
  return custom(name, [target](const std::string& v, std::string*) {
    *target = v;
    return true;
  });
}

ArgParser& ArgParser::texts(const std::string& name, std::vector<std::string>* target) {
  return custom(name, [target](const std::string& v, std::string*) {
    target->push_back(v);
    return true;
  });
}

ArgParser& ArgParser::sizeList(const std::string& name, std::vector<uint64_t>* target, uint64_t min) {
  return custom(name, [target, min](const std::string& v, std::string* error) {
    std::vector<uint64_t> parsed;
    for (const std::string& item : splitCommas(v)) {
      uint64_t s = 0;
      if (!parseSize(item, &s, error)) {
        *error = "item " + quoted(item) + ": " + *error;
        return false;
      }
      if (s < min) {
        *error = "item " + quoted(item) + ": below the smallest allowed size, " + std::to_string(min) + " bytes";
        return false;
      }
      parsed.push_back(s);
    }
    *target = std::move(parsed);
    return true;
  });
}

ArgParser& ArgParser::integerList(const std::string& name, std::vector<int>* target, int min, int max) {
  return custom(name, [target, min, max](const std::string& v, std::string* error) {
    std::vector<int> parsed;
    for (const std::string& item : splitCommas(v)) {
      int64_t n = 0;
      if (!parseInteger(item, min, max, &n, error)) {
        *error = "item " + quoted(item) + ": " + *error;
        return false;
      }
      parsed.push_back(static_cast<int>(n));
    }
    *target = std::move(parsed);
    return true;
  });
}

ArgParser& ArgParser::required(const std::string& name) {
  Option* o = find(name);
  if (o != nullptr) o->required = true;
  return *this;
}

ArgParser& ArgParser::positional(std::vector<std::string>* target, size_t min, size_t max, const std::string& meaning) {
  positional_ = target;
  minPositional_ = min;
  maxPositional_ = max;
  positionalMeaning_ = meaning;
  return *this;
}

ArgParser& ArgParser::command(const std::vector<std::string>& names, std::string* target) {
  commands_ = names;
  command_ = target;
  return *this;
}

ArgParser::Option* ArgParser::find(const std::string& name) {
  for (Option& o : options_) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

const ArgParser::Option* ArgParser::find(const std::string& name) const {
  for (const Option& o : options_) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

bool ArgParser::given(const std::string& name) const {
  const Option* o = find(name);
  return o != nullptr && o->seen;
}

int ArgParser::usageError(const std::string& message) const {
  std::fprintf(err_, "%s: %s\n%s", program_.c_str(), message.c_str(), usage_.c_str());
  return 2;
}

int ArgParser::parse(int argc, char** argv, int first) {
  bool optionsEnded = false;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    const bool isOption = !optionsEnded && a.size() > 1 && a[0] == '-';
    if (isOption && a == "--") {
      optionsEnded = true;
      continue;
    }
    if (isOption && (a == "--help" || a == "-h")) {
      std::fputs(usage_.c_str(), out_);
      return 0;
    }
    if (isOption && a == "--version") {
      std::fprintf(out_, "%s\n", versionLine(program_).c_str());
      return 0;
    }
    if (isOption) {
      const size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      Option* o = find(name);
      if (o == nullptr) return usageError("unknown option " + quoted(name));
      if (!o->takesValue) {
        if (eq != std::string::npos) return usageError(name + " takes no value");
        *o->flag = true;
      } else {
        std::string value;
        if (eq != std::string::npos) {
          value = a.substr(eq + 1);
        } else if (i + 1 < argc) {
          value = argv[++i];
        } else {
          return usageError(name + " needs a value");
        }
        std::string error;
        if (!o->set(value, &error)) return usageError(name + " " + quoted(value) + ": " + error);
      }
      o->seen = true;
      continue;
    }
    if (command_ != nullptr) {
      bool known = false;
      for (const std::string& c : commands_) known = known || c == a;
      if (!known) return usageError("unknown command " + quoted(a));
      *command_ = a;
      next_ = i + 1;
      return kContinue;
    }
    if (positional_ == nullptr) return usageError("unexpected argument " + quoted(a));
    if (positional_->size() >= maxPositional_) {
      return usageError("unexpected argument " + quoted(a) + " (at most " + std::to_string(maxPositional_) + " " +
                        positionalMeaning_ + ")");
    }
    positional_->push_back(a);
  }
  next_ = argc;
  if (command_ != nullptr) {
    std::string list;
    for (const std::string& c : commands_) list += (list.empty() ? "" : ", ") + c;
    return usageError("a command is needed: " + list);
  }
  for (const Option& o : options_) {
    if (o.required && !o.seen) return usageError(o.name + " is required");
  }
  if (positional_ != nullptr && positional_->size() < minPositional_) {
    const std::string count = minPositional_ == maxPositional_
                                  ? (minPositional_ == 1 ? "one" : std::to_string(minPositional_))
                              : minPositional_ == 1 ? "at least one"
                                                    : "at least " + std::to_string(minPositional_);
    return usageError("needs " + count + " " + positionalMeaning_);
  }
  return kContinue;
}

}  // namespace mscclpp::tools
