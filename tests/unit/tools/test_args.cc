// The tools' shared argument parser: checked integers, the one size syntax,
// reals, options with values, flags, lists, required options, positional
// arguments, commands, --help / --version and the usage errors.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "support/args.hpp"

using mscclpp::tools::ArgParser;
using mscclpp::tools::parseInteger;
using mscclpp::tools::parseReal;
using mscclpp::tools::parseSize;

namespace {

std::string intError(const std::string& text, int64_t min, int64_t max) {
  int64_t v = 12345;
  std::string error;
  const bool ok = parseInteger(text, min, max, &v, &error);
  CHECK(!ok);
  CHECK(v == 12345);  // untouched on failure
  return error;
}

int64_t intValue(const std::string& text, int64_t min = INT64_MIN, int64_t max = INT64_MAX) {
  int64_t v = 0;
  std::string error;
  INFO(text);
  REQUIRE(parseInteger(text, min, max, &v, &error));
  return v;
}

uint64_t sizeValue(const std::string& text) {
  uint64_t v = 0;
  std::string error;
  INFO(text);
  REQUIRE(parseSize(text, &v, &error));
  return v;
}

std::string sizeError(const std::string& text) {
  uint64_t v = 7;
  std::string error;
  CHECK(!parseSize(text, &v, &error));
  CHECK(v == 7);
  return error;
}

// Runs a parser over args (argv[0] is added) with its output captured.
struct Run {
  int status;
  std::string out, err;
};

std::string readAll(FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  return s;
}

Run run(ArgParser& parser, std::vector<std::string> args, int first = 1) {
  args.insert(args.begin(), "tool");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  parser.setStreams(out, err);
  Run r;
  r.status = parser.parse(static_cast<int>(argv.size()), argv.data(), first);
  r.out = readAll(out);
  r.err = readAll(err);
  std::fclose(out);
  std::fclose(err);
  return r;
}

const char* kUsage = "usage: tool [--n N] [--size B] [--v] FILE\n";

}  // namespace

TEST_CASE("integers: whole decimal text within the range", "[args]") {
  CHECK(intValue("0") == 0);
  CHECK(intValue("4096", 1, 4096) == 4096);
  CHECK(intValue("-17", -100, 100) == -17);
  CHECK(intValue("9223372036854775807") == INT64_MAX);
  CHECK(intValue("-9223372036854775808") == INT64_MIN);
  CHECK(intValue("007") == 7);
  CHECK(intError("", 0, 10) == "empty, expected an integer");
  CHECK(intError("12x", 0, 100) == "not an integer (trailing 'x')");
  CHECK(intError("1.5", 0, 100) == "not an integer (trailing '.5')");
  CHECK(intError("0x10", 0, 100) == "not an integer (trailing 'x10')");
  CHECK(intError(" 12", 0, 100) == "not an integer");
  CHECK(intError("+3", 0, 100) == "not an integer");
  CHECK(intError("abc", 0, 100) == "not an integer");
  CHECK(intError("-", -5, 100) == "not an integer");
  CHECK(intError("-1", 0, 100) == "must not be negative");
  CHECK(intError("-1", 1, 100) == "must not be negative");
  CHECK(intError("-11", -10, 100) == "below the smallest allowed value, -10");
  CHECK(intError("0", 1, 4096) == "below the smallest allowed value, 1");
  CHECK(intError("4097", 1, 4096) == "above the largest allowed value, 4096");
  // Overflow of 64 bits is an error, never a wrap.
  CHECK(intError("9223372036854775808", 0, INT64_MAX) == "above the largest allowed value, 9223372036854775807");
  CHECK(intError("99999999999999999999999", 0, 10) == "above the largest allowed value, 10");
  CHECK(intError("-9223372036854775809", INT64_MIN, 0) == "below the smallest allowed value, -9223372036854775808");
}

TEST_CASE("sizes: one syntax, binary units", "[args]") {
  CHECK(sizeValue("0") == 0);
  CHECK(sizeValue("1024") == 1024);
  CHECK(sizeValue("512B") == 512);
  for (const char* k : {"4K", "4k", "4KB", "4KiB", "4kiB"}) CHECK(sizeValue(k) == 4096);
  for (const char* m : {"1M", "1m", "1MB", "1MiB"}) CHECK(sizeValue(m) == (1ull << 20));
  CHECK(sizeValue("2G") == (2ull << 30));
  CHECK(sizeValue("3GiB") == (3ull << 30));
  CHECK(sizeValue("1T") == (1ull << 40));
  CHECK(sizeValue("18446744073709551615") == UINT64_MAX);
  CHECK(sizeValue("16777215T") == (16777215ull << 40));
  CHECK(sizeError("").rfind("empty; a byte count is a whole number", 0) == 0);
  CHECK(sizeError("-4K") == "must not be negative");
  CHECK(sizeError("K").rfind("not a byte count; ", 0) == 0);
  CHECK(sizeError("1.5M").rfind("not a whole number of bytes; ", 0) == 0);
  CHECK(sizeError("4Q").rfind("unknown unit 'Q'; ", 0) == 0);
  CHECK(sizeError("4KiBs").rfind("unknown unit 'KiBs'; ", 0) == 0);
  CHECK(sizeError("4 K").rfind("unknown unit ' K'; ", 0) == 0);
  CHECK(sizeError("4b").rfind("unknown unit 'b'; ", 0) == 0);  // bits or bytes? refused
  CHECK(sizeError("4kb").rfind("unknown unit 'kb'; ", 0) == 0);
  CHECK(sizeError("18446744073709551616") == "too large: more than 2^64 - 1 bytes");
  CHECK(sizeError("16777216T") == "too large: more than 2^64 - 1 bytes");
  CHECK(sizeError("99999999999999999999999K") == "too large: more than 2^64 - 1 bytes");
}

TEST_CASE("reals: whole text, finite, within the range", "[args]") {
  double v = 0;
  std::string error;
  CHECK(parseReal("2.5", 0, 10, &v, &error));
  CHECK(v == 2.5);
  CHECK(parseReal("-1e-3", -1, 1, &v, &error));
  CHECK(!parseReal("2.5s", 0, 10, &v, &error));
  CHECK(error == "not a number (trailing 's')");
  CHECK(!parseReal("", 0, 10, &v, &error));
  CHECK(!parseReal(" 1", 0, 10, &v, &error));
  CHECK(!parseReal("nan", 0, 10, &v, &error));
  CHECK(!parseReal("1e999", 0, 1e300, &v, &error));
  CHECK(error == "out of range");
  CHECK(!parseReal("0", 1e-3, 10, &v, &error));
  CHECK(error == "not in [0.001, 10]");
}

TEST_CASE("options, flags, positional arguments and required options", "[args]") {
  int n = 0;
  uint64_t size = 0;
  bool verbose = false;
  std::vector<std::string> files;
  auto parser = [&] {
    files.clear();
    ArgParser p("tool", kUsage);
    p.integer("--n", &n, 1, 64).size("--size", &size).flag("--v", &verbose).positional(&files, 1, 1, "FILE");
    p.required("--n");
    return p;
  };
  ArgParser p = parser();
  Run r = run(p, {"--n", "8", "--size=64K", "--v", "plan.json"});
  CHECK(r.status == ArgParser::kContinue);
  CHECK((n == 8 && size == 65536 && verbose && files == std::vector<std::string>{"plan.json"}));
  CHECK(p.given("--size"));
  CHECK(!p.given("--nothing"));
  CHECK((r.out.empty() && r.err.empty()));

  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Bad> bads = {
      {{"--n", "8", "--sise", "4K", "f"}, "tool: unknown option '--sise'\n"},
      {{"--n", "8", "f", "--size"}, "tool: --size needs a value\n"},
      {{"--n", "8x", "f"}, "tool: --n '8x': not an integer (trailing 'x')\n"},
      {{"--n", "-8", "f"}, "tool: --n '-8': must not be negative\n"},
      {{"--n", "65", "f"}, "tool: --n '65': above the largest allowed value, 64\n"},
      {{"--n=", "f"}, "tool: --n '': empty, expected an integer\n"},
      {{"--n", "8", "--size", "4X", "f"}, "tool: --size '4X': unknown unit 'X'; "},
      {{"--n", "8", "--v=1", "f"}, "tool: --v takes no value\n"},
      {{"f"}, "tool: --n is required\n"},
      {{"--n", "8"}, "tool: needs one FILE\n"},
      {{"--n", "8", "a", "b"}, "tool: unexpected argument 'b' (at most 1 FILE)\n"},
  };
  for (const Bad& bad : bads) {
    ArgParser q = parser();
    Run b = run(q, bad.args);
    INFO(bad.message);
    CHECK(b.status == 2);
    CHECK(b.out.empty());
    CHECK(b.err.rfind(bad.message, 0) == 0);
    CHECK(b.err.find(kUsage) != std::string::npos);  // the usage follows the message
  }
}

TEST_CASE("--help and --version end the parse with 0 anywhere", "[args]") {
  int n = 0;
  for (const auto& args : std::vector<std::vector<std::string>>{{"--help"}, {"-h"}, {"--n", "3", "--help"}}) {
    ArgParser p("tool", kUsage);
    p.integer("--n", &n).required("--n");
    Run r = run(p, args);
    CHECK(r.status == 0);
    CHECK(r.out == kUsage);
    CHECK(r.err.empty());
  }
  ArgParser p("tool", kUsage);
  p.integer("--n", &n).required("--n");
  Run r = run(p, {"--version"});
  CHECK(r.status == 0);
  CHECK(r.out == "tool (MSCCL++) " MSCCLPP_VERSION_STRING "\n");
  // a bad option before --help is reported (arguments are read in order, as getopt does)
  ArgParser q("tool", kUsage);
  q.integer("--n", &n);
  CHECK(run(q, {"--n", "x", "--help"}).status == 2);
}

TEST_CASE("'--' ends the options; lists; repeated options", "[args]") {
  std::vector<std::string> files, tags;
  std::vector<uint64_t> sizes;
  std::vector<int> ranks;
  ArgParser p("tool", kUsage);
  p.texts("--tag", &tags).sizeList("--sizes", &sizes, 1).integerList("--ranks", &ranks, 1, 64);
  p.positional(&files, 0, 5, "FILE");
  Run r = run(p, {"--tag", "a", "--tag=b", "--sizes", "64K,1M,512", "--ranks", "2,4,8", "--", "--not-an-option", "-"});
  CHECK(r.status == ArgParser::kContinue);
  CHECK(tags == std::vector<std::string>{"a", "b"});
  CHECK(sizes == std::vector<uint64_t>{65536, 1 << 20, 512});
  CHECK(ranks == std::vector<int>{2, 4, 8});
  CHECK(files == std::vector<std::string>{"--not-an-option", "-"});
  ArgParser q("tool", kUsage);
  q.sizeList("--sizes", &sizes, 1).integerList("--ranks", &ranks, 1, 64);
  CHECK(run(q, {"--sizes", "64K,,1M"}).err.rfind("tool: --sizes '64K,,1M': item '': empty; ", 0) == 0);
  CHECK(run(q, {"--sizes", "64K,0"})
            .err.rfind("tool: --sizes '64K,0': item '0': below the smallest allowed size, 1 bytes", 0) == 0);
  CHECK(run(q, {"--ranks", "2,4,"}).err.rfind("tool: --ranks '2,4,': item '': empty, expected an integer", 0) == 0);
  CHECK(run(q, {"--ranks", "2,99"})
            .err.rfind("tool: --ranks '2,99': item '99': above the largest allowed value, 64", 0) == 0);
}

TEST_CASE("commands: the first non-option picks the command's parser", "[args]") {
  std::string command;
  ArgParser top("tool", kUsage);
  top.command({"validate", "select"}, &command);
  Run r = run(top, {"select", "--bytes", "1K"});
  CHECK(r.status == ArgParser::kContinue);
  CHECK(command == "select");
  CHECK(top.nextIndex() == 2);
  uint64_t bytes = 0;
  ArgParser sub("tool select", kUsage);
  sub.size("--bytes", &bytes);
  CHECK(run(sub, {"select", "--bytes", "1K"}, top.nextIndex()).status == ArgParser::kContinue);
  CHECK(bytes == 1024);

  ArgParser unknown("tool", kUsage);
  unknown.command({"validate", "select"}, &command);
  CHECK(run(unknown, {"frob"}).err.rfind("tool: unknown command 'frob'\n", 0) == 0);
  ArgParser none("tool", kUsage);
  none.command({"validate", "select"}, &command);
  Run n = run(none, {});
  CHECK(n.status == 2);
  CHECK(n.err.rfind("tool: a command is needed: validate, select\n", 0) == 0);
  ArgParser version("tool", kUsage);
  version.command({"validate"}, &command);
  CHECK(run(version, {"--version"}).status == 0);
}

TEST_CASE("usageError for checks after the parse", "[args]") {
  ArgParser p("tool", kUsage);
  FILE* err = std::tmpfile();
  p.setStreams(stdout, err);
  CHECK(p.usageError("--root is not below --ranks") == 2);
  CHECK(readAll(err) == std::string("tool: --root is not below --ranks\n") + kUsage);
  std::fclose(err);
}
