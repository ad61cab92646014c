#include "plan/verify/collective_spec.hpp"

namespace mscclpp::plan::verify {

bool hasDefinition(Collective c) { return c != Collective::Test && c != Collective::Custom; }

Expectation expectedOutput(const Plan& plan, const CallLayout& layout, uint32_t rank, TermTable* terms) {
  Expectation x;
  const PlanHeader& h = plan.header;
  const RankLayout& R = layout.ranks[rank];
  const uint32_t n = static_cast<uint32_t>(h.worldSize);
  const uint32_t root = static_cast<uint32_t>(h.root);
  const int64_t base = static_cast<int64_t>(R.outputBase);
  const uint64_t out = R.outputBytes, in = R.inputBytes;
  // Output offsets [o0, o1) hold value v,
  // whose shift is relative to output offsets.
  auto piece = [&](uint64_t o0, uint64_t o1, Value v) {
    if (o1 > o0) x.pieces.push_back({R.outputBase + o0, R.outputBase + o1, v.moved(-base)});
  };
  auto reduction = [&](int64_t shift) {
    std::vector<Contribution> all;
    for (uint32_t s = 0; s < n; ++s) all.push_back({s, shift});
    return terms->make(all);
  };
  switch (h.collective) {
    case Collective::AllReduce:
      x.checked = true;
      piece(0, out, reduction(0));
      break;
    case Collective::Reduce:
      x.checked = rank == root;
      if (x.checked) piece(0, out, reduction(0));
      break;
    case Collective::ReduceScatter:
      x.checked = true;
      piece(0, out, reduction(static_cast<int64_t>(rank * out)));
      break;
    case Collective::AllGather:
    case Collective::Gather:
      x.checked = h.collective == Collective::AllGather || rank == root;
      if (x.checked && in > 0)
        for (uint32_t s = 0; s < n && s * in < out; ++s)
          piece(s * in, std::min<uint64_t>(out, (s + 1) * in), terms->input(s, -static_cast<int64_t>(s * in)));
      break;
    case Collective::AllToAll: {
      x.checked = true;
      const uint64_t b = out / n;
      if (b > 0)
        for (uint32_t s = 0; s < n; ++s)
          piece(s * b, (s + 1) * b, terms->input(s, static_cast<int64_t>(rank * b) - static_cast<int64_t>(s * b)));
      break;
    }
    case Collective::Broadcast:
      x.checked = true;
      piece(0, out, terms->input(root, 0));
      break;
    case Collective::Scatter:
      x.checked = true;
      piece(0, out, terms->input(root, static_cast<int64_t>(rank * out)));
      break;
    case Collective::SendRecv:
      x.checked = true;
      x.anyOneRank = true;
      break;
    default:
      break;
  }
  return x;
}

}  // namespace mscclpp::plan::verify
