// mscclpp-plan: check plan files and see which plan a call would get.
//   mscclpp-plan validate FILE...   full validation of every rank; exit 0 when all are valid, else 1
//   mscclpp-plan info FILE          what the plan contains and which sizes it serves
//   mscclpp-plan select --dir D ... which plan serves a call and why (exit 0),
//                                   or why none does (exit 1)
//   mscclpp-plan explain ...        every candidate for a call and why it runs, loses or cannot serve
//   mscclpp-plan verify FILE...     the plan verifier
//   mscclpp-plan show FILE -o OUT   the plan's picture
// Usage errors exit with 2; --help and --version exit 0, also after a command.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/plan/commands.hpp"
#include "core/format.hpp"
#include "mscclpp/errors.hpp"
#include "plan/op_rules.hpp"
#include "plan/plan_loader.hpp"
#include "plan/plan_names.hpp"
#include "plan/plan_sizing.hpp"
#include "plan/registry.hpp"
#include "support/args.hpp"

namespace {

using namespace mscclpp::plan;

const char* kUsage =
    "usage: mscclpp-plan validate FILE...\n"
    "       mscclpp-plan info FILE\n"
    "       mscclpp-plan select --dir DIR [--dir DIR...] --collective C --ranks N [--ranks-per-node M]\n"
    "                           --bytes B [--inplace] [--dtype T] [--op O] [--root R] [--tag T...]\n"
    "       mscclpp-plan explain [--dir DIR...] [--register FILE...] --collective C --ranks N ... (as select)\n"
    "       mscclpp-plan verify [options] FILE...          (mscclpp-plan verify --help)\n"
    "       mscclpp-plan show FILE -o OUT.svg|OUT.html ... (mscclpp-plan show --help)\n"
    "       mscclpp-plan --help | --version\n"
    "  select: B is the message size (allgather: output bytes, gather/scatter: per-rank bytes, else input\n"
    "          bytes): a whole number with an optional binary unit K, M, G or T (4K, 1MiB, 2G);\n"
    "  M defaults to N (one node); T is an NCCL datatype name (float32, float16,\n"
    "  bfloat16, float64, int8, uint8, int32, uint32, int64, uint64, float8e4m3, float8e5m2; default float32);\n"
    "  O is sum, prod, max, min or avg (default sum for allreduce, reducescatter and reduce); R defaults to 0\n"
    "  for broadcast and reduce.\n"
    "  explain: every candidate plan and why it runs, loses or cannot serve. Without --dir it reads the\n"
    "  runtime's plan directories (MSCCLPP_PLAN_DIR, else the installed defaults and the plan cache);\n"
    "  --register FILE registers a plan as mscclpp.plan.register does.\n"
    "exit status: 0 success, 1 invalid plan or no plan, 2 usage error\n";

using mscclpp::tools::ArgParser;

int validate(int argc, char** argv, int first) {
  std::vector<std::string> files;
  ArgParser args("mscclpp-plan validate", kUsage);
  args.positional(&files, 1, SIZE_MAX, "FILE");
  if (int stop = args.parse(argc, argv, first); stop != ArgParser::kContinue) return stop;
  int failed = 0;
  for (const std::string& file : files) {
    try {
      PlanPtr plan = loadPlanFile(file);
      std::printf("%s: OK (%s, %s, %d ranks)\n", file.c_str(), plan->header.name.c_str(),
                  collectiveName(plan->header.collective), plan->header.worldSize);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}

std::string reduceOps(uint32_t mask) {
  std::string s;
  for (int i = 1; i <= static_cast<int>(PlanReduceOp::Max); ++i) {
    if (mask & (1u << i)) s += (s.empty() ? "" : ", ") + std::string(planReduceOpName(static_cast<PlanReduceOp>(i)));
  }
  return s.empty() ? "none (the plan does not reduce)" : s;
}

// The message sizes the plan serves: multiples of
// a step within [min, max], from the sizing rule.
std::string servedSizes(const Plan& plan) {
  const PlanHeader& h = plan.header;
  const RankPlan& r0 = plan.ranks[0];
  if (r0.inputChunks == 0 && r0.outputChunks == 0) return "none: the plan has no input or output chunks";
  const bool byInput = r0.inputChunks != 0;
  uint64_t step = static_cast<uint64_t>(byInput ? r0.inputChunks : r0.outputChunks) * h.bufferAlignment;
  const uint64_t n = static_cast<uint64_t>(h.worldSize);
  if (byInput && h.collective == Collective::AllGather) step *= n;
  if (!byInput && h.collective == Collective::ReduceScatter) step *= n;
  // A scatter's message is its output, the per-rank
  // part: the input's n parts divide into it.
  if (byInput && h.collective == Collective::Scatter && r0.outputChunks != 0)
    step = static_cast<uint64_t>(r0.outputChunks) * h.bufferAlignment;
  uint64_t first = h.minMessageSize <= step ? step : (h.minMessageSize + step - 1) / step * step;
  if (first > h.maxMessageSize) return "none: no multiple of " + mscclpp::formatBytes(step) + " lies in the size range";
  uint64_t in = 0, out = 0;
  std::string why;
  if (!callBytesFromMessage(h.collective, first, h.worldSize, &in, &out, &why)) return "none: " + why;
  size_t maxElement = 1;
  if (h.reduceOps != 0) maxElement = 8;
  SizingResult s = sizePlan(h, r0, in, out, 0);
  if (!s.ok) return "none: e.g. " + mscclpp::formatBytes(first) + ": " + s.reason;
  // Unit plans run exact sizes only; a collective's other sizes run padded (docs/plan-core.md).
  const bool pads = h.collective != Collective::Custom && h.collective != Collective::Test;
  const std::string range =
      mscclpp::strFormat("[%s, %s]", mscclpp::formatBytes(h.minMessageSize).c_str(),
                         h.maxMessageSize == UINT64_MAX ? "unbounded" : mscclpp::formatBytes(h.maxMessageSize).c_str());
  const std::string multiples =
      mscclpp::strFormat("multiples of %s (%" PRIu64 " bytes)", mscclpp::formatBytes(step).c_str(), step);
  std::string text =
      pads ? "any size in " + range + ": " + multiples + " fit its chunks exactly, others run padded up to the next one"
           : multiples + " in " + range;
  text += mscclpp::strFormat("; e.g. %s: chunk %s, scratch %s per rank", mscclpp::formatBytes(first).c_str(),
                             mscclpp::formatBytes(s.chunkBytes).c_str(), mscclpp::formatBytes(s.scratchBytes).c_str());
  if (h.reduceOps != 0 && h.bufferAlignment < maxElement) text += "; chunks must also hold whole elements";
  return text;
}

int info(int argc, char** argv, int first) {
  std::vector<std::string> files;
  ArgParser args("mscclpp-plan info", kUsage);
  args.positional(&files, 1, 1, "FILE");
  if (int stop = args.parse(argc, argv, first); stop != ArgParser::kContinue) return stop;
  PlanPtr plan;
  try {
    plan = loadPlanFile(files[0]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  const PlanHeader& h = plan->header;
  std::map<std::string, uint64_t> opsByType;
  uint64_t threadblocks = 0, ops = 0, memory = 0, port = 0, implicitChannels = 0, switches = 0, remote = 0, sems = 0,
           barriers = 0;
  uint32_t maxScratch = 0;
  size_t minTb = SIZE_MAX, maxTb = 0;
  for (const RankPlan& r : plan->ranks) {
    threadblocks += r.threadblocks.size();
    minTb = std::min(minTb, r.threadblocks.size());
    maxTb = std::max(maxTb, r.threadblocks.size());
    for (const ThreadblockPlan& tb : r.threadblocks) {
      ops += tb.ops.size();
      for (const Op& op : tb.ops) ++opsByType[opTypeName(op.type)];
    }
    for (const auto& c : r.memoryChannels) (c.implicit ? implicitChannels : memory) += 1;
    for (const auto& c : r.portChannels) (c.implicit ? implicitChannels : port) += 1;
    switches += r.switchChannels.size();
    remote += r.remoteBuffers.size();
    sems += r.semaphoreInitValues.size();
    barriers += r.numBarriers;
    maxScratch = std::max(maxScratch, r.scratchChunks);
  }
  std::string opText;
  for (const auto& [name, count] : opsByType)
    opText += mscclpp::strFormat("%s%s %" PRIu64, opText.empty() ? "" : ", ", name.c_str(), count);
  std::string tags;
  for (const auto& t : h.tags) tags += (tags.empty() ? "" : ", ") + t;
  std::printf("plan             %s\n", h.name.c_str());
  std::printf("source           %s\n", h.source.c_str());
  std::printf("collective       %s\n", collectiveName(h.collective));
  std::printf("protocol         %s\n", protocolName(h.protocol));
  std::printf("in-place         %s\n", h.inPlace ? "yes" : "no");
  std::printf("ranks            %d (ranks per node: %s)\n", h.worldSize,
              h.nRanksPerNode ? std::to_string(h.nRanksPerNode).c_str() : "any");
  if (isRootedCollective(h.collective)) std::printf("root             %d\n", h.root);
  std::printf("threads/block    %d\n", h.numThreadsPerBlock);
  std::printf("alignment        %u bytes\n", h.bufferAlignment);
  std::printf("format version   %d%s\n", h.formatVersion,
              h.formatVersion == 0 ? " (no format_version key: MSCCL++ plan)" : "");
  std::printf("tags             %s\n", tags.empty() ? "(none)" : tags.c_str());
  std::printf("reduce ops       %s\n", reduceOps(h.reduceOps).c_str());
  std::printf("chunks           input %u, output %u, scratch up to %u per rank\n", plan->ranks[0].inputChunks,
              plan->ranks[0].outputChunks, maxScratch);
  std::printf("scratch          chunk x %u%s%s per rank (largest rank)\n", maxScratch,
              h.protocol == Protocol::LL ? " x 2 (LL packets)" : "",
              h.useDoubleScratchBuffer ? " x 2 (double buffer)" : "");
  std::printf("threadblocks     %" PRIu64 " (%zu to %zu per rank)\n", threadblocks, minTb, maxTb);
  std::printf("ops              %" PRIu64 ": %s\n", ops, opText.empty() ? "(none)" : opText.c_str());
  std::printf("channels         memory %" PRIu64 ", port %" PRIu64 ", switch %" PRIu64 " (+%" PRIu64
              " implicit pairs)\n",
              memory, port, switches, implicitChannels);
  std::printf("remote buffers   %" PRIu64 "\n", remote);
  std::printf("semaphores       %" PRIu64 "\n", sems);
  std::printf("barriers         %" PRIu64 "\n", barriers);
  std::printf("message sizes    %s\n", servedSizes(*plan).c_str());
  return 0;
}

int dtypeFromName(const std::string& s) {
  static const std::map<std::string, int> names = {
      {"int8", 0},  {"char", 0},        {"uint8", 1},    {"int32", 2},       {"int", 2},     {"uint32", 3},
      {"int64", 4}, {"uint64", 5},      {"float16", 6},  {"half", 6},        {"f16", 6},     {"float32", 7},
      {"float", 7}, {"f32", 7},         {"float64", 8},  {"double", 8},      {"f64", 8},     {"bfloat16", 9},
      {"bf16", 9},  {"float8e4m3", 10}, {"fp8e4m3", 10}, {"float8e5m2", 11}, {"fp8e5m2", 11}};
  auto it = names.find(s);
  if (it != names.end()) return it->second;
  int64_t v = -1;
  std::string unused;
  return mscclpp::tools::parseInteger(s, 0, 11, &v, &unused) ? static_cast<int>(v) : -1;
}

int opFromName(const std::string& s) {
  static const std::map<std::string, int> names = {{"sum", 0}, {"prod", 1}, {"max", 2}, {"min", 3}, {"avg", 4}};
  auto it = names.find(s);
  return it != names.end() ? it->second : -1;
}

// The options select and explain share: the call, and where the plans are.
struct CallOptions {
  std::vector<std::string> dirs, registered, tags;
  std::vector<const char*> tagPointers;
  SelectRequest request;
};

// Parses the call; returns ArgParser::kContinue, or the exit status.
int parseCall(const char* tool, bool explain, int argc, char** argv, int first, CallOptions* call) {
  std::string collective;
  int ranks = 0, perNode = 0, root = -1, dtype = 7, op = -2;
  uint64_t bytes = 0;
  bool inPlace = false;
  ArgParser args(tool, kUsage);
  args.texts("--dir", &call->dirs)
      .text("--collective", &collective)
      .integer("--ranks", &ranks, 1, 1 << 20)
      .integer("--ranks-per-node", &perNode, 1, 1 << 20)
      .size("--bytes", &bytes)
      .flag("--inplace", &inPlace)
      .custom("--dtype",
              [&](const std::string& v, std::string* error) {
                dtype = dtypeFromName(v);
                *error = "not an NCCL datatype";
                return dtype >= 0;
              })
      .custom("--op",
              [&](const std::string& v, std::string* error) {
                op = opFromName(v);
                *error = "not one of sum, prod, max, min, avg";
                return op >= 0;
              })
      .integer("--root", &root, 0, (1 << 20) - 1)
      .texts("--tag", &call->tags)
      .required("--collective")
      .required("--ranks")
      .required("--bytes");
  if (explain) {
    args.texts("--register", &call->registered);
  } else {
    args.required("--dir");
  }
  if (int stop = args.parse(argc, argv, first); stop != ArgParser::kContinue) return stop;
  SelectRequest& request = call->request;
  if (!collectiveFromName(std::string_view(collective), &request.collective)) {
    return args.usageError("--collective '" + collective + "' is not one of " + collectiveNameList());
  }
  if (perNode == 0) perNode = ranks;
  if (perNode > ranks) return args.usageError("--ranks-per-node is larger than --ranks");
  const bool reduces = request.collective == Collective::AllReduce || request.collective == Collective::ReduceScatter ||
                       request.collective == Collective::Reduce;
  const bool rooted = isRootedCollective(request.collective);
  if (root >= ranks) return args.usageError("--root is not below --ranks");
  for (const auto& t : call->tags) call->tagPointers.push_back(t.c_str());
  request.worldSize = ranks;
  request.nRanksPerNode = perNode;
  request.messageBytes = bytes;
  request.inPlace = inPlace;
  request.dtype = dtype;
  request.redOp = op == -2 ? (reduces ? 0 : -1) : op;
  request.root = rooted ? (root < 0 ? 0 : root) : -1;
  request.tags = call->tagPointers.data();
  request.nTags = static_cast<int>(call->tagPointers.size());
  return ArgParser::kContinue;
}

int select(int argc, char** argv, int first) {
  CallOptions call;
  if (int stop = parseCall("mscclpp-plan select", false, argc, argv, first, &call); stop != ArgParser::kContinue)
    return stop;
  // Load the chosen plan's rank 0, so a plan
  // failing full validation is skipped.
  call.request.rank = 0;
  Registry registry(call.dirs);
  SelectionPtr s;
  try {
    s = registry.select(call.request);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mscclpp-plan: %s\n", e.what());
    return 1;
  }
  if (s->name.empty()) {
    std::printf("no plan: %s\n", s->reason.c_str());
    return 1;
  }
  std::printf("plan: %s (%s)\n%s\n", s->name.c_str(), s->source.c_str(), s->reason.c_str());
  return 0;
}

int explain(int argc, char** argv, int first) {
  CallOptions call;
  if (int stop = parseCall("mscclpp-plan explain", true, argc, argv, first, &call); stop != ArgParser::kContinue)
    return stop;
  // The runtime's own directories unless --dir names others.
  std::unique_ptr<Registry> registryPtr =
      call.dirs.empty() ? Registry::fromEnvironment() : std::make_unique<Registry>(call.dirs);
  Registry& registry = *registryPtr;
  try {
    for (const std::string& file : call.registered) {
      std::string name;
      if (registry.registerFile(file, {}, &name) == Registry::Status::Duplicate) {
        std::fprintf(stderr, "mscclpp-plan: %s: plan name '%s' is already registered\n", file.c_str(), name.c_str());
        return 1;
      }
    }
    const std::string text = registry.explain(call.request);
    std::printf("%s", text.c_str());
    return text.find("\nruns: no plan") == std::string::npos ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mscclpp-plan: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string command;
  ArgParser args("mscclpp-plan", kUsage);
  args.command({"validate", "info", "select", "explain", "verify", "show", "help"}, &command);
  if (int stop = args.parse(argc, argv); stop != ArgParser::kContinue) return stop;
  if (command == "validate") return validate(argc, argv, args.nextIndex());
  if (command == "info") return info(argc, argv, args.nextIndex());
  if (command == "select") return select(argc, argv, args.nextIndex());
  if (command == "explain") return explain(argc, argv, args.nextIndex());
  if (command == "verify") return verifyCommand(argc, argv, args.nextIndex());
  if (command == "show") return showCommand(argc, argv, args.nextIndex());
  std::printf("%s", kUsage);  // help
  return 0;
}
