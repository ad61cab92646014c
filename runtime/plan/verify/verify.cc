// The verifier's driver. For each chunk size standing for the plan's message sizes:
// build the model of consecutive calls, find a schedule or the deadlock,
// order the accesses, and execute symbolically.
#include "plan/verify/verify.hpp"

#include <set>
#include <tuple>

#include "core/format.hpp"
#include "plan/verify/collective_spec.hpp"
#include "plan/verify/event_graph.hpp"
#include "plan/verify/happens_before.hpp"
#include "plan/verify/schedule.hpp"
#include "plan/verify/size_cases.hpp"
#include "plan/verify/symbolic.hpp"
#include "plan/verify/variable_model.hpp"

namespace mscclpp::plan::verify {
namespace {

// The first call's signal to wait edges,
// a port signal drawn from the op that pushed it,
// and the data flows the symbolic execution saw, one per pair of ops.
void collectFlows(const Graph& g, const std::vector<std::pair<uint32_t, uint32_t>>& data, std::vector<Flow>* out) {
  std::set<std::tuple<int, int, int, int, int, int, int>> seen;
  auto add = [&](Flow f) {
    if (!f.from.valid() || !f.to.valid() || f.from.op < 0 || f.to.op < 0) return;
    if (seen.insert({static_cast<int>(f.kind), f.from.rank, f.from.threadblock, f.from.op, f.to.rank, f.to.threadblock,
                     f.to.op})
            .second)
      out->push_back(std::move(f));
  };
  std::vector<uint8_t> producer(g.events.size(), 0);
  for (const CounterUse& u : g.producers) producer[u.event] = 1;
  for (const Edge& e : g.edges) {
    const Event& a = g.events[e.from];
    const Event& b = g.events[e.to];
    if (!producer[e.from] || a.call != 0 || b.call != 0 || (b.kind != EvKind::Wait && b.kind != EvKind::SemAcquire))
      continue;
    Flow f;
    f.kind = Flow::Kind::Signal;
    f.from = g.site(a.anchor != kNone ? a.anchor : e.from);
    f.to = g.site(e.to);
    const Op& op = g.plan->ranks[b.rank].threadblocks[b.tb].ops[b.op];
    f.channel = op.channelType;
    f.relaxed = a.relaxed || b.relaxed;
    add(f);
  }
  for (const auto& [w, r] : data) {
    Flow f;
    f.kind = Flow::Kind::Data;
    f.from = g.site(g.events[w].anchor != kNone ? g.events[w].anchor : w);
    f.to = g.site(r);
    add(f);
  }
}

// Events a model of `calls` calls at this chunk would have, at most UINT64_MAX.
// Pipeline iterations grow with the chunk.
uint64_t estimateEvents(const Plan& plan, uint64_t chunk, int calls) {
  unsigned __int128 total = 0;
  for (const RankPlan& r : plan.ranks)
    for (const ThreadblockPlan& tb : r.threadblocks)
      for (size_t i = 0; i < tb.ops.size(); ++i) {
        const Op& op = tb.ops[i];
        if (op.type != OpType::Pipeline || op.unitSize == 0) {
          total += 2;
          continue;
        }
        const unsigned __int128 iterations =
            (static_cast<unsigned __int128>(op.numChunks) * chunk + op.unitSize - 1) / op.unitSize;
        total += 2 * iterations * op.bodyCount;
        i += op.bodyCount;
      }
  total *= static_cast<unsigned>(calls);
  return total > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(total);
}

}  // namespace

namespace {

// A variable-size plan: its unit model, verified as the fixed-size
// collective, and the lengths of every op's segments.
Result verifyVariablePlan(const Plan& plan, const Options& options) {
  std::vector<Finding> lengths = lengthFindings(plan);
  Result result = verifyPlan(unitModel(plan), options);
  result.everyBinding = true;
  if (lengths.size() > options.maxFindings) lengths.resize(options.maxFindings);
  result.findings.insert(result.findings.begin(), lengths.begin(), lengths.end());
  if (result.findings.size() > options.maxFindings) result.findings.resize(options.maxFindings);
  result.proven = result.proven && lengths.empty();
  result.sizeNote =
      "variable sizes: every segment and scratch slot is one unit, which stands for every binding of the counts "
      "(in findings, chunk k of an input or output is its segment for rank k, chunk k of scratch is slot k)";
  return result;
}

}  // namespace

Result verifyPlan(const Plan& plan, const Options& options) {
  if (plan.header.variableSizes) return verifyVariablePlan(plan, options);
  Result result;
  FindingSink sink(options.maxFindings == 0 ? 1 : options.maxFindings);
  result.resultChecked = hasDefinition(plan.header.collective);
  for (const RankPlan& r : plan.ranks) {
    if (!r.hasOps) {
      Finding f;
      f.kind = FindingKind::Unchecked;
      f.message =
          strFormat("the plan was loaded without the threadblocks of rank %d; load every rank to verify it", r.rank);
      sink.add("not loaded", f);
      result.findings = sink.take();
      return result;
    }
  }
  const SizeCases sizes = chooseSizes(plan, options.reuseScratchBytes);
  result.sizesStandForAll = sizes.standForAll;
  result.sizeNote = sizes.note;
  if (sizes.chunks.empty()) {
    Finding f;
    f.kind = FindingKind::Unchecked;
    f.message =
        "no message size in [min_message_size, max_message_size] divides into the plan's chunks: the plan "
        "serves no call";
    sink.add("no sizes", f);
  }
  // Two calls share every buffer;
  // double scratch reuses a half every second call.
  const int calls = plan.header.useDoubleScratchBuffer ? 3 : 2;
  for (uint64_t chunk : sizes.chunks) {
    const CallLayout layout = makeLayout(plan, chunk, options.reuseScratchBytes);
    if (!layout.served) {
      result.sizeNote +=
          strFormat("; chunk %llu: not served (%s)", static_cast<unsigned long long>(chunk), layout.refusal.c_str());
      continue;
    }
    const uint64_t estimate = estimateEvents(plan, chunk, calls);
    if (estimate > options.maxEvents) {
      Finding f;
      f.kind = FindingKind::Unchecked;
      f.chunkBytes = chunk;
      f.message = strFormat(
          "at chunk size %llu the model would have about %llu events, more than the verifier's "
          "limit of %llu (Options::maxEvents): this size is not checked",
          static_cast<unsigned long long>(chunk), static_cast<unsigned long long>(estimate),
          static_cast<unsigned long long>(options.maxEvents));
      sink.add("too large " + std::to_string(chunk), f);
      continue;
    }
    result.chunkSizes.push_back(chunk);
    sink.setChunkBytes(chunk);
    Graph g = buildGraph(plan, layout, calls, &sink);
    addCounterEdges(&g, &sink);
    addPacketEdges(&g, &sink);
    g.finalize();
    const Schedule s = simulate(g, &sink);
    HappensBefore hb(g, s, options.strictKernelBoundaries);
    TermTable terms;
    const bool flows = options.collectFlows && result.chunkSizes.size() == 1;
    std::vector<std::pair<uint32_t, uint32_t>> data;
    const uint64_t accesses = runSymbolic(g, s, &hb, &terms, &sink, flows ? &data : nullptr);
    if (flows) collectFlows(g, data, &result.flows);
    result.events = std::max<uint64_t>(result.events, g.events.size());
    result.accesses = std::max(result.accesses, accesses);
    if (sink.full()) break;
  }
  const size_t dropped = sink.dropped();
  result.findings = sink.take();
  if (dropped > 0) result.sizeNote += strFormat("; %zu more finding(s) not shown", dropped);
  result.proven = result.findings.empty() && !result.chunkSizes.empty() && result.sizesStandForAll;
  if (result.findings.empty() && !result.sizesStandForAll) {
    Finding f;
    f.kind = FindingKind::Unchecked;
    f.message = "no problem found at the sizes checked, but they do not stand for every size the plan accepts (" +
                sizes.note + ")";
    result.findings.push_back(f);
  }
  return result;
}

}  // namespace mscclpp::plan::verify
