// The command-line parser every tool shares, so all read arguments
// by one rule. Numbers are checked whole, decimal, in the option's
// range; an overflow is an error, never a wrap. Sizes are a whole
// number with an optional binary unit: 1024, 4K, 4KiB, 1m, 512B.
// --help and --version print and exit 0. Any usage error prints
// "tool: what is wrong" and the usage on stderr and exits 2.
// A value follows its option or an '='; "--" ends the options.
// Only the standard library: the demo, an NCCL program, uses it too.
#ifndef MSCCLPP_TOOLS_SUPPORT_ARGS_HPP_
#define MSCCLPP_TOOLS_SUPPORT_ARGS_HPP_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace mscclpp::tools {

// Each returns false unless the whole text is valid,
// with *error naming the text and what is wrong.
bool parseInteger(const std::string& text, int64_t min, int64_t max, int64_t* out, std::string* error);
bool parseSize(const std::string& text, uint64_t* out, std::string* error);
bool parseReal(const std::string& text, double min, double max, double* out, std::string* error);

class ArgParser {
 public:
  // What parse() returns when the tool should
  // go on. Anything else is main's exit status.
  static constexpr int kContinue = -1;

  // program: the name messages start with. usage: what
  // --help prints, and what follows a usage error.
  ArgParser(std::string program, std::string usage);

  ArgParser& flag(const std::string& name, bool* target);
  template <class T>
  ArgParser& integer(const std::string& name, T* target,
                     typename std::common_type<T>::type min = std::numeric_limits<T>::min(),
                     typename std::common_type<T>::type max = std::numeric_limits<T>::max()) {
    static_assert(std::is_integral<T>::value && sizeof(T) <= sizeof(int64_t), "an integer type of at most 64 bits");
    const int64_t lo = static_cast<int64_t>(min);
    const int64_t hi = std::is_unsigned<T>::value && sizeof(T) == sizeof(int64_t) ? std::numeric_limits<int64_t>::max()
                                                                                  : static_cast<int64_t>(max);
    return custom(name, [target, lo, hi](const std::string& v, std::string* error) {
      int64_t parsed = 0;
      if (!parseInteger(v, lo, hi, &parsed, error)) return false;
      *target = static_cast<T>(parsed);
      return true;
    });
  }
  ArgParser& size(const std::string& name, uint64_t* target, uint64_t min = 0,
                  uint64_t max = std::numeric_limits<uint64_t>::max());
  ArgParser& real(const std::string& name, double* target, double min, double max);
  ArgParser& text(const std::string& name, std::string* target);
  // Repeatable: every occurrence appends.
  ArgParser& texts(const std::string& name, std::vector<std::string>* target);
  // A comma-separated list such as "--sizes 64K,1M", read item by item.
  ArgParser& sizeList(const std::string& name, std::vector<uint64_t>* target, uint64_t min = 0);
  ArgParser& integerList(const std::string& name, std::vector<int>* target, int min, int max);
  // For any other value, set returns false with *error saying why.
  ArgParser& custom(const std::string& name, std::function<bool(const std::string&, std::string*)> set);
  // The option must be given; checked once all arguments were read.
  ArgParser& required(const std::string& name);
  // Between min and max arguments that are not options;
  // meaning names them in errors, such as "FILE".
  ArgParser& positional(std::vector<std::string>* target, size_t min, size_t max, const std::string& meaning);
  // The first argument that is not an option must be one of names.
  // Parsing stops after it; nextIndex() is the command's first argument.
  ArgParser& command(const std::vector<std::string>& names, std::string* target);

  // Reads argv[first..argc). Returns kContinue, 0 after --help or
  // --version, or 2 after a usage error.
  int parse(int argc, char** argv, int first = 1);
  int nextIndex() const { return next_; }
  bool given(const std::string& name) const;

  // Prints "program: message" and the usage on the error stream
  // and returns 2, for checks a tool makes after parse().
  int usageError(const std::string& message) const;

  // Where help, version and errors go: stdout
  // and stderr, unless a test redirects them.
  void setStreams(FILE* out, FILE* err) {
    out_ = out;
    err_ = err;
  }

 private:
  struct Option {
    std::string name;
    bool takesValue;
    std::function<bool(const std::string&, std::string*)> set;  // takesValue
    bool* flag = nullptr;                                       // !takesValue
    bool required = false;
    bool seen = false;
  };
  Option* find(const std::string& name);
  const Option* find(const std::string& name) const;
  ArgParser& add(Option option);

  std::string program_;
  std::string usage_;
  std::vector<Option> options_;
  std::vector<std::string>* positional_ = nullptr;
  size_t minPositional_ = 0, maxPositional_ = 0;
  std::string positionalMeaning_;
  std::vector<std::string> commands_;
  std::string* command_ = nullptr;
  int next_ = 0;
  FILE* out_ = stdout;
  FILE* err_ = stderr;
};

// "mscclpp-plan (MSCCL++) 0.1.0": what --version prints.
std::string versionLine(const std::string& program);

}  // namespace mscclpp::tools

#endif  // MSCCLPP_TOOLS_SUPPORT_ARGS_HPP_
