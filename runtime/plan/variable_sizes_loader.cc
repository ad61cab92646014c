// The loader's rules for variable-size plans (docs/plan-format.md, "Variable
// sizes"): the header's declaration, one chunk per input and output buffer,
// and every data reference placed by segment.
#include "core/format.hpp"
#include "plan/plan_loader_impl.hpp"
#include "plan/plan_names.hpp"
#include "plan/variable_sizes.hpp"

namespace mscclpp::plan::detail {

using json::Type;
using json::Value;

namespace {
const char* const kVariableSizesKeys[] = {"parameters", "slot_bytes"};
const char* const kSegmentKeys[] = {"table", "peer"};
}  // namespace

void readVariableSizes(const Checker& check, const json::Document& doc, const Value& root, const Path& top,
                       bool traceKeys, PlanHeader* h) {
  const Value* v = doc.member(root, "variable_sizes");
  const bool variable = isVariableCollective(h->collective);
  if (v == nullptr) {
    if (variable) {
      check.fail(top, "collective %s needs variable_sizes (the counts that bind its segments at each call)",
                 collectiveName(h->collective));
    }
    return;
  }
  const Path at = top.key("variable_sizes");
  if (!variable) {
    check.failPath(at, "is only for the variable-size collectives alltoallv, allgatherv and reducescatterv, not %s",
                   collectiveName(h->collective));
  }
  if (h->formatVersion < 2) {
    check.failPath(at, "needs format_version 2 or newer (format_version is %d): older readers cannot run it",
                   h->formatVersion);
  }
  check.expectType(*v, at, Type::Object);
  const Value& params = check.require(doc, *v, at, "parameters");
  if (check.string(params, at.key("parameters")) != "count_matrix") {
    check.failValue(at.key("parameters"), params, "is not count_matrix, the one parameter set this reader binds");
  }
  if (const Value* slot = doc.member(*v, "slot_bytes")) {
    h->slotBytes = check.u64(*slot, at.key("slot_bytes"));
    if (h->slotBytes % h->bufferAlignment != 0) {
      check.failValue(at.key("slot_bytes"), *slot, "is not a multiple of buffer_alignment=%u", h->bufferAlignment);
    }
  }
  if (h->inPlace) {
    check.failValue(top.key("inplace"), *doc.member(root, "inplace"),
                    "but a variable-size plan is out of place (the executor stages an in-place call)");
  }
  if (h->reuseResources) {
    check.failValue(top.key("reuse_resources"), *doc.member(root, "reuse_resources"),
                    "but a variable-size plan's scratch is its slots, not shared");
  }
  if (traceKeys) logUnknownKeys(check, doc, *v, at, kVariableSizesKeys, 2);
  h->variableSizes = true;
}

void checkVariableRank(const Checker& check, const json::Document& doc, const Value& gpu, const Path& at,
                       const PlanHeader& h, const RankPlan& rp) {
  if (!h.variableSizes) return;
  if (rp.inputChunks != 1) {
    check.failValue(at.key("input_chunks"), *doc.member(gpu, "input_chunks"),
                    "but a variable-size plan has one input chunk, the whole buffer, placed by segments");
  }
  if (rp.outputChunks != 1) {
    check.failValue(at.key("output_chunks"), *doc.member(gpu, "output_chunks"),
                    "but a variable-size plan has one output chunk, the whole buffer, placed by segments");
  }
  if (rp.scratchChunks > 0 && h.slotBytes == 0) {
    check.failValue(at.key("scratch_chunks"), *doc.member(gpu, "scratch_chunks"),
                    "counts scratch slots, but variable_sizes.slot_bytes is not set");
  }
  if (!rp.switchChannels.empty()) {
    check.failPath(at.key("channels"),
                   "declares switch channels, which bind whole buffers: a variable-size plan's buffers are sized per "
                   "call");
  }
}

void readSegment(const Checker& check, const json::Document& doc, const Value& ref, const Path& at, const PlanHeader& h,
                 bool traceKeys, BufferRef* out) {
  const Value* seg = doc.member(ref, "segment");
  if (seg == nullptr) {
    if (h.variableSizes && out->kind != RefKind::Multicast) {
      check.fail(at, "has no segment: a variable-size plan places every reference by segment ({\"table\", \"peer\"})");
    }
    return;
  }
  const Path sp = at.key("segment");
  if (!h.variableSizes) check.failPath(sp, "is only for plans with variable_sizes");
  check.expectType(*seg, sp, Type::Object);
  const Value& table = check.require(doc, *seg, sp, "table");
  const std::string_view name = check.string(table, sp.key("table"));
  if (name == "send") {
    out->segment = SegmentTable::Send;
  } else if (name == "recv") {
    out->segment = SegmentTable::Recv;
  } else {
    check.failValue(sp.key("table"), table, "is not one of send, recv");
  }
  // The send table places the input's segments, the recv table the output's;
  // a scratch slot takes either's length.
  if ((out->type == BufferType::Input && out->segment != SegmentTable::Send) ||
      (out->type == BufferType::Output && out->segment != SegmentTable::Recv)) {
    check.failValue(sp.key("table"), table, "cannot place a segment of the %s buffer (its table is %s)",
                    bufferTypeLongName(out->type), out->type == BufferType::Input ? "send" : "recv");
  }
  const Value& peer = check.require(doc, *seg, sp, "peer");
  out->segmentPeer = check.u32(peer, sp.key("peer"));
  if (out->segmentPeer >= static_cast<uint32_t>(h.worldSize)) {
    check.failValue(sp.key("peer"), peer, "out of range (the plan has %d ranks)", h.worldSize);
  }
  if (out->size != 1) {
    check.failValue(at.key("size"), *doc.member(ref, "size"),
                    "but a segment reference covers one chunk: its segment, or one scratch slot");
  }
  if (out->type != BufferType::Scratch && out->index != 0) {
    check.failValue(at.key("index"), *doc.member(ref, "index"),
                    "but a segment of the %s buffer has index 0: the counts place it", bufferTypeLongName(out->type));
  }
  if (traceKeys) logUnknownKeys(check, doc, *seg, sp, kSegmentKeys, 2);
}

void checkVariableOp(const Checker& check, const Path& at, const PlanHeader& h, const Op& op) {
  if (!h.variableSizes) return;
  if (op.type == OpType::Pipeline) {
    check.fail(at, "is a pipeline: a variable-size plan's segments are not cut into units");
  }
  if (op.tbgSize > 1) {
    check.failPath(at.key("tbg_info"),
                   "splits the op over %u threadblocks: a variable-size plan's segments are not split", op.tbgSize);
  }
}

}  // namespace mscclpp::plan::detail
