// The plan JSON reader: values, strict syntax with positions, the nesting limit, skipping with spans.
#include <catch2/catch.hpp>

#include "mscclpp/errors.hpp"
#include "plan/json_reader.hpp"

using namespace mscclpp::plan::json;

namespace {

std::string parseError(const std::string& text) {
  Document doc;
  Parser parser(text, "x.json");
  try {
    parser.parseDocument(&doc);
  } catch (const mscclpp::Error& e) {
    CHECK(e.code() == mscclpp::ErrorCode::InvalidPlan);
    return e.what();
  }
  return "";
}

struct Recorder : SkipObserver {
  std::vector<std::string> events;
  void onStringMember(int depth, std::string_view key, std::string_view value) override {
    events.push_back(std::to_string(depth) + ":" + std::string(key) + "=" + std::string(value));
  }
  void onObjectEnd(int depth) override { events.push_back(std::to_string(depth) + ":end"); }
};

}  // namespace

TEST_CASE("values: numbers keep their literal and exact 64-bit value", "[plan][json]") {
  const std::string text =
      R"({"a": 0, "b": -12, "c": 18446744073709551615, "d": 18446744073709551616, "e": 1.5e3, "f": true, "g": null,)"
      R"( "h": "x\ty\u00e9\ud83d\ude00", "i": [1, [2, {}]], "j": {}})";
  Document doc;
  Parser parser(text, "x.json");
  parser.parseDocument(&doc);
  const Value& root = doc.root();
  REQUIRE(root.type == Type::Object);
  REQUIRE(root.count == 10);
  CHECK(doc.child(root, 0).keyView() == "a");  // members keep text order
  const Value& b = *doc.member(root, "b");
  CHECK((b.integer && b.negative && b.magnitude == 12 && b.str() == "-12"));
  const Value& c = *doc.member(root, "c");
  CHECK((c.integer && c.magnitude == UINT64_MAX));
  CHECK_FALSE(doc.member(root, "d")->integer);  // beyond 64 bits
  CHECK(doc.member(root, "d")->str() == "18446744073709551616");
  CHECK_FALSE(doc.member(root, "e")->integer);
  CHECK(doc.member(root, "e")->str() == "1.5e3");
  CHECK((doc.member(root, "f")->type == Type::Bool && doc.member(root, "f")->boolean));
  CHECK(doc.member(root, "g")->type == Type::Null);
  CHECK(doc.member(root, "h")->str() == "x\ty\xc3\xa9\xf0\x9f\x98\x80");
  const Value& i = *doc.member(root, "i");
  REQUIRE(i.count == 2);
  CHECK(doc.child(i, 0).magnitude == 1);
  CHECK(doc.child(doc.child(i, 1), 1).type == Type::Object);
  CHECK(doc.member(root, "zz") == nullptr);
}

TEST_CASE("syntax errors name the line, the column and the problem", "[plan][json]") {
  CHECK(parseError("") == "x.json: invalid JSON at line 1, column 1: no JSON value (the input is empty)");
  CHECK(parseError("  \n ") == "x.json: invalid JSON at line 2, column 2: no JSON value (the input is empty)");
  CHECK(
      parseError("{\n  \"a\": tru\n}") ==
      "x.json: invalid JSON at line 2, column 8: invalid value (expected a number, string, object, array, true, false "
      "or null)");
  CHECK(parseError("{\"a\": 1") ==
        "x.json: invalid JSON at line 1, column 8: unexpected end of input inside an object");
  CHECK(parseError("[1, 2") == "x.json: invalid JSON at line 1, column 6: unexpected end of input inside an array");
  CHECK(parseError("{\"a\" 1}") == "x.json: invalid JSON at line 1, column 6: expected ':' after a member name");
  CHECK(parseError("{\"a\": 1 \"b\": 2}") ==
        "x.json: invalid JSON at line 1, column 9: expected ',' or '}' after an object member");
  CHECK(parseError("[1 2]") == "x.json: invalid JSON at line 1, column 4: expected ',' or ']' after an array element");
  CHECK(parseError("{1: 2}") == "x.json: invalid JSON at line 1, column 2: expected a member name (a string)");
  CHECK(parseError("{} x") == "x.json: invalid JSON at line 1, column 4: unexpected text after the JSON value");
  CHECK(parseError("\"abc") == "x.json: invalid JSON at line 1, column 1: unterminated string");
  CHECK(parseError("\"a\x01\"") ==
        "x.json: invalid JSON at line 1, column 3: control character inside a string (it must be escaped)");
  CHECK(parseError("\"a\\q\"") == "x.json: invalid JSON at line 1, column 3: invalid escape '\\q'");
  CHECK(parseError("\"\\u12g4\"") ==
        "x.json: invalid JSON at line 1, column 2: invalid \\u escape (needs 4 hex digits)");
  CHECK(parseError("\"\\ud800x\"") ==
        "x.json: invalid JSON at line 1, column 2: unpaired UTF-16 surrogate in \\u escape");
  CHECK(parseError("-") ==
        "x.json: invalid JSON at line 1, column 1: invalid value (expected a number, string, object, array, true, "
        "false or null)");
  CHECK(parseError("1.") == "x.json: invalid JSON at line 1, column 1: invalid number (digits must follow '.')");
  CHECK(parseError("1e+") ==
        "x.json: invalid JSON at line 1, column 1: invalid number (digits must follow the exponent)");
  CHECK(parseError("01") == "x.json: invalid JSON at line 1, column 2: unexpected text after the JSON value");
  CHECK(parseError("{\"a\": 1, \"a\": 2}") == "x.json: duplicate member \"a\" at line 1, column 15");
  CHECK(parseError("\xEF\xBB\xBF{}") == "");  // a UTF-8 byte order mark is allowed
}

TEST_CASE("nesting is limited instead of recursing without bound", "[plan][json]") {
  CHECK(parseError(std::string(kMaxDepth, '[') + std::string(kMaxDepth, ']')) == "");
  CHECK(parseError(std::string(kMaxDepth + 1, '[') + std::string(kMaxDepth + 1, ']')) ==
        "x.json: invalid JSON at line 1, column 65: nesting deeper than 64 levels");
  CHECK(parseError(std::string(1000000, '[')) ==
        "x.json: invalid JSON at line 1, column 65: nesting deeper than 64 levels");
  // the same limit holds inside skipped parts
  const std::string deep = "{\"gpus\": [{\"threadblocks\": [" + std::string(100000, '[') + "]}]}";
  Document doc;
  Parser parser(deep, "x.json");
  SkipRule rule{"threadblocks", 2};
  CHECK_THROWS_WITH(parser.parseDocument(&doc, &rule),
                    "x.json: invalid JSON at line 1, column 89: nesting deeper than 64 levels");
}

TEST_CASE("skipped arrays are checked, kept as spans, parsed on demand", "[plan][json]") {
  const std::string text =
      R"({"gpus": [{"id": 0, "threadblocks": [{"ops": [{"name": "re", "reduce_op": "max"}]}, []]},)"
      R"( {"threadblocks": 3}]})";
  Document doc;
  Parser parser(text, "x.json");
  SkipRule rule{"threadblocks", 2};
  Recorder recorder;
  parser.parseDocument(&doc, &rule, &recorder);
  const Value& gpus = *doc.member(doc.root(), "gpus");
  const Value& tbs = *doc.member(doc.child(gpus, 0), "threadblocks");
  CHECK(tbs.skipped);
  REQUIRE(tbs.count == 2);
  const Span s0 = doc.span(tbs, 0);
  CHECK(text.substr(s0.begin, s0.end - s0.begin) == R"({"ops": [{"name": "re", "reduce_op": "max"}]})");
  CHECK(recorder.events == std::vector<std::string>{"2:name=re", "2:reduce_op=max", "2:end", "0:end"});
  // a non-array under the same key is parsed normally (the loader then reports its type)
  CHECK_FALSE(doc.member(doc.child(gpus, 1), "threadblocks")->skipped);
  Document tb;
  parser.parseSpan(s0, &tb);
  CHECK(tb.root().type == Type::Object);
  const Value& ops = *tb.member(tb.root(), "ops");
  REQUIRE(ops.count == 1);
  CHECK(tb.member(tb.child(ops, 0), "reduce_op")->str() == "max");
  // errors inside a skipped part still stop the load, with their position in the whole text
  const std::string bad = R"({"gpus": [{"threadblocks": [{"ops": [1,,2]}]}]})";
  Parser badParser(bad, "x.json");
  CHECK_THROWS_WITH(
      badParser.parseDocument(&doc, &rule),
      "x.json: invalid JSON at line 1, column 40: invalid value (expected a number, string, object, array, "
      "true, false or null)");
}
