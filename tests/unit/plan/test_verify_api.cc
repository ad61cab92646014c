// The verifier's entry points: the C API (mscclppPlanVerify), the registry
// under MSCCLPP_VERIFY_PLANS, the CLI (mscclpp-plan verify / show), and the
// picture's model.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/plan/render/plan_picture.hpp"
#include "cli/plan/render/svg_writer.hpp"
#include "core/params.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp/plan_api.h"
#include "plan/registry.hpp"
#include "plan/verify/verify.hpp"
#include "plan_test_util.hpp"
#include "verify_test_plans.hpp"

using namespace verifytest;

namespace {

struct EnvGuard {
  explicit EnvGuard(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
    mscclpp::params::resetCache();  // parameters are read once and cached
  }
  ~EnvGuard() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
    mscclpp::params::resetCache();
  }
  const char* name_;
  bool had_ = false;
  std::string old_;
};

int runCli(const std::string& args, std::string* out) {
  const std::string cmd = std::string(MSCCLPP_PLAN_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("C API: mscclppPlanVerify proves, refutes and refuses", "[verify][api]") {
  char report[8192], err[1024];
  const std::string good = allgatherPut("ok").dump();
  CHECK(mscclppPlanVerify("good.json", good.data(), good.size(), report, sizeof(report), err, sizeof(err)) == 1);
  CHECK(std::string(report).find("good.json: PROVEN") == 0);
  const std::string bad = allgatherPut("no-signal-wait").dump();
  CHECK(mscclppPlanVerify(nullptr, bad.data(), bad.size(), report, sizeof(report), err, sizeof(err)) == 0);
  CHECK(std::string(report).find("NOT PROVEN") != std::string::npos);
  CHECK(std::string(report).find("race: ") != std::string::npos);
  CHECK(mscclppPlanVerify("x.json", "{", 1, report, sizeof(report), err, sizeof(err)) == mscclppPlanInvalid);
  CHECK(std::string(err).find("x.json: invalid JSON") == 0);
  CHECK(mscclppPlanVerify(nullptr, nullptr, 0, report, sizeof(report), err, sizeof(err)) == mscclppPlanBadArgument);
  plantest::TempDir dir;
  plantest::writeFile(dir.file("p.json"), good);
  CHECK(mscclppPlanVerify(dir.file("p.json").c_str(), nullptr, 0, report, sizeof(report), err, sizeof(err)) == 1);
}

TEST_CASE("a model over Options::maxEvents is unchecked, not proven", "[verify][api]") {
  auto plan = plantest::load(allgatherPut("ok"));
  mscclpp::plan::verify::Options options;
  options.maxEvents = 10;
  const auto r = mscclpp::plan::verify::verifyPlan(*plan, options);
  CHECK_FALSE(r.proven);
  REQUIRE(r.findings.size() >= 1);
  CHECK(r.findings[0].kind == mscclpp::plan::verify::FindingKind::Unchecked);
  CHECK(r.findings[0].message.find("more than the verifier's limit of 10") != std::string::npos);
}

TEST_CASE("MSCCLPP_VERIFY_PLANS=1 skips plans it cannot prove", "[verify][registry]") {
  plantest::TempDir dir;
  plantest::writeFile(dir.file("a_good.json"), allgatherPut("ok").dump());
  plantest::writeFile(dir.file("b_bad.json"), allgatherPut("no-signal-wait").dump());
  {
    mscclpp::plan::Registry plain({dir.path()});
    CHECK(plain.count() == 2);  // off by default
  }
  EnvGuard on("MSCCLPP_VERIFY_PLANS", "1");
  mscclpp::plan::Registry registry({dir.path()});
  CHECK(registry.count() == 1);
  const std::string bad = allgatherPut("shifted-put").dump();
  try {
    registry.registerJson(bad, "shifted.json", {});
    FAIL("registered a plan the verifier refutes");
  } catch (const mscclpp::Error& e) {
    CHECK(e.code() == mscclpp::ErrorCode::InvalidPlan);
    CHECK(std::string(e.what()).find("shifted.json: not proven by the plan verifier (MSCCLPP_VERIFY_PLANS=1)") == 0);
  }
  CHECK(registry.registerJson(allgatherPut("ok").dump(), "ok.json", {}) == mscclpp::plan::Registry::Status::Duplicate);
}

TEST_CASE("mscclpp-plan verify: exit status and report", "[verify][cli]") {
  plantest::TempDir dir;
  plantest::writeFile(dir.file("good.json"), allgatherPut("ok").dump());
  plantest::writeFile(dir.file("bad.json"), allgatherPut("wait-first").dump());
  std::string out;
  CHECK(runCli("verify " + dir.file("good.json"), &out) == 0);
  CHECK(out.find("PROVEN (allgather_put_ok, allgather, 2 ranks)") != std::string::npos);
  CHECK(runCli("verify " + dir.file("good.json") + " " + dir.file("bad.json"), &out) == 1);
  CHECK(out.find("deadlock: rank ") != std::string::npos);
  CHECK(runCli("verify --max-findings x " + dir.file("good.json"), &out) == 2);
  CHECK(runCli("verify", &out) == 2);
}

TEST_CASE("mscclpp-plan show: SVG and HTML, a lane per threadblock", "[verify][show]") {
  plantest::TempDir dir;
  plantest::writeFile(dir.file("bad.json"), allgatherPut("no-nop-before-signal").dump());
  std::string out;
  REQUIRE(runCli("show " + dir.file("bad.json") + " -o " + dir.file("p.svg"), &out) == 0);
  std::ifstream f(dir.file("p.svg"));
  std::stringstream svg;
  svg << f.rdbuf();
  const std::string s = svg.str();
  CHECK(s.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(s.find("class=\"lane\" data-rank=\"1\" data-tb=\"0\"") != std::string::npos);
  CHECK(s.find("stroke=\"#dc2626\"") != std::string::npos);  // the racing ops are outlined
  REQUIRE(runCli("show " + dir.file("bad.json") + " -o " + dir.file("p.html") + " --ranks 1", &out) == 0);
  std::ifstream h(dir.file("p.html"));
  std::stringstream html;
  html << h.rdbuf();
  CHECK(html.str().find("<script>") != std::string::npos);
  CHECK(html.str().find("data-rank=\"0\" data-tb=\"0\"") == std::string::npos);  // rank 0 filtered out
  CHECK(runCli("show " + dir.file("bad.json") + " -o " + dir.file("p.png"), &out) == 2);
  CHECK(runCli("show " + dir.file("bad.json") + " -o " + dir.file("p.svg") + " --ranks 2", &out) == 2);
}

TEST_CASE("the picture: lanes, signal arrows, causal column order", "[verify][show]") {
  auto plan = plantest::load(allgatherPut("ok"));
  mscclpp::plan::verify::Options options;
  options.collectFlows = true;
  const auto result = mscclpp::plan::verify::verifyPlan(*plan, options);
  const auto pic = mscclpp::plan::render::buildPicture(*plan, &result, {});
  REQUIRE(pic.lanes.size() == 2);
  bool signalArrow = false;
  for (const auto& a : pic.arrows) {
    const auto& from = pic.boxes[a.from];
    const auto& to = pic.boxes[a.to];
    CHECK(to.column > from.column);  // every arrow points right
    if (!a.data && from.title == "signal" && to.title == "wait") signalArrow = from.rank != to.rank;
  }
  CHECK(signalArrow);
  std::set<int> ranks;
  std::string error;
  CHECK(mscclpp::plan::render::parseRankList("0,2-3", 4, &ranks, &error));
  CHECK(ranks == std::set<int>{0, 2, 3});
  CHECK_FALSE(mscclpp::plan::render::parseRankList("1-x", 4, &ranks, &error));
  CHECK_FALSE(mscclpp::plan::render::parseRankList("5", 4, &ranks, &error));
}
