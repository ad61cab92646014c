// mscclpp-plan show PLAN -o FILE.svg|FILE.html: draws the plan, with
// the verifier's signal and data arrows and its findings, unless
// --no-verify.
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli/plan/commands.hpp"
#include "cli/plan/render/plan_picture.hpp"
#include "cli/plan/render/svg_writer.hpp"
#include "plan/plan_loader.hpp"
#include "plan/verify/verify.hpp"
#include "support/args.hpp"

namespace {

const char* const kShowUsage =
    "usage: mscclpp-plan show FILE -o OUT.svg|OUT.html [--ranks 0,2-3] [--no-verify]\n"
    "  draws the plan: one lane per rank and threadblock, ops coloured by channel type, signal -> wait and data\n"
    "  arrows, the verifier's findings in red (docs/plan-verifier.md); .html adds zoom, pan and details on hover.\n"
    "  --ranks keeps the lanes of those ranks; --no-verify draws the ops only (no arrows, no findings).\n"
    "exit status: 0 drawn, 1 the plan does not load or OUT cannot be written, 2 usage error\n";

bool endsWith(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

}  // namespace

int showCommand(int argc, char** argv, int first) {
  std::string out, ranks;
  bool noVerify = false;
  std::vector<std::string> files;
  mscclpp::tools::ArgParser args("mscclpp-plan show", kShowUsage);
  args.text("-o", &out)
      .text("--output", &out)
      .text("--ranks", &ranks)
      .flag("--no-verify", &noVerify)
      .positional(&files, 1, 1, "FILE");
  if (int stop = args.parse(argc, argv, first); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  if (out.empty()) return args.usageError("-o OUT.svg or -o OUT.html is required");
  const bool html = endsWith(out, ".html") || endsWith(out, ".htm");
  if (!html && !endsWith(out, ".svg")) return args.usageError("'" + out + "': the output must end in .svg or .html");
  mscclpp::plan::PlanPtr plan;
  try {
    plan = mscclpp::plan::loadPlanFile(files[0]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::set<int> shown;
  if (!ranks.empty()) {
    std::string error;
    if (!mscclpp::plan::render::parseRankList(ranks, plan->header.worldSize, &shown, &error))
      return args.usageError("--ranks '" + ranks + "': " + error);
  }
  mscclpp::plan::verify::Result result;
  if (!noVerify) {
    mscclpp::plan::verify::Options options;
    options.collectFlows = true;
    result = mscclpp::plan::verify::verifyPlan(*plan, options);
  }
  const auto picture = mscclpp::plan::render::buildPicture(*plan, noVerify ? nullptr : &result, shown);
  const std::string text = html ? mscclpp::plan::render::toHtml(picture) : mscclpp::plan::render::toSvg(picture);
  std::ofstream f(out, std::ios::binary);
  f << text;
  f.close();
  if (!f) {
    std::fprintf(stderr, "mscclpp-plan show: cannot write %s\n", out.c_str());
    return 1;
  }
  std::printf("wrote %s (%zu lanes, %zu ops, %zu arrows; %s)\n", out.c_str(), picture.lanes.size(),
              picture.boxes.size(), picture.arrows.size(), picture.verdict.c_str());
  return 0;
}
