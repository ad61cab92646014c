#include "plan/verify/findings.hpp"

#include "core/format.hpp"

namespace mscclpp::plan::verify {

const char* findingKindName(FindingKind kind) {
  switch (kind) {
    case FindingKind::Deadlock:
      return "deadlock";
    case FindingKind::Race:
      return "race";
    case FindingKind::WrongResult:
      return "wrong result";
    case FindingKind::Leftover:
      return "leftover";
    case FindingKind::Unchecked:
      return "unchecked";
  }
  return "?";
}

void FindingSink::add(const std::string& key, Finding finding) {
  if (!keys_.insert(key).second) return;
  if (findings_.size() >= limit_) {
    ++dropped_;
    return;
  }
  if (finding.chunkBytes == 0) finding.chunkBytes = chunkBytes_;
  findings_.push_back(std::move(finding));
}

std::string siteKey(const OpSite& s) {
  if (!s.valid()) return "-";
  return strFormat("r%d.tb%d.op%d", s.rank, s.threadblock, s.op);
}

std::string describeSite(const OpSite& s) {
  if (!s.valid()) return "(none)";
  if (s.threadblock < 0) {
    return strFormat("rank %d %s", s.rank, s.name.empty() ? "host" : s.name.c_str());
  }
  std::string what = s.name;
  if (s.iteration >= 0) what += strFormat(", pipeline iteration %d", s.iteration);
  if (!s.source.empty()) what += ", " + s.source;
  return strFormat("rank %d threadblock %d op %d (%s)", s.rank, s.threadblock, s.op, what.c_str());
}

std::string formatFinding(const Finding& f) {
  std::string text = std::string(findingKindName(f.kind)) + ": ";
  if (f.at.valid()) text += describeSite(f.at) + ": ";
  text += f.message;
  return text;
}

std::string formatResult(const Plan& plan, const Result& r) {
  std::string sizes;
  const size_t shown = std::min<size_t>(r.chunkSizes.size(), 6);
  for (size_t i = 0; i < shown; ++i) sizes += (i ? ", " : "") + std::to_string(r.chunkSizes[i]);
  if (r.chunkSizes.size() > shown) sizes += strFormat(", ... (%zu sizes)", r.chunkSizes.size());
  std::string text;
  if (r.proven && r.everyBinding) {
    text = strFormat("%s: PROVEN (%s, %s, %d ranks): %s for every binding of its counts\n", plan.header.source.c_str(),
                     plan.header.name.c_str(), collectiveName(plan.header.collective), plan.header.worldSize,
                     "race-free, deadlock-free, no leftover counts, every output segment correct");
    if (!r.sizeNote.empty()) text += "  " + r.sizeNote + "\n";
    return text;
  }
  if (r.proven) {
    text = strFormat("%s: PROVEN (%s, %s, %d ranks): %s%s; chunk sizes checked: %s bytes\n", plan.header.source.c_str(),
                     plan.header.name.c_str(), collectiveName(plan.header.collective), plan.header.worldSize,
                     r.resultChecked ? "race-free, deadlock-free, no leftover counts, every output chunk correct"
                                     : "race-free, deadlock-free, no leftover counts (a test plan: no result to check)",
                     r.everyBinding       ? " for every binding of its counts"
                     : r.sizesStandForAll ? " for every message size it accepts"
                                          : " at the sizes checked",
                     sizes.c_str());
    if (!r.sizeNote.empty()) text += "  " + r.sizeNote + "\n";
    return text;
  }
  text = strFormat("%s: NOT PROVEN (%s, %s, %d ranks): %zu finding(s); chunk sizes checked: %s bytes\n",
                   plan.header.source.c_str(), plan.header.name.c_str(), collectiveName(plan.header.collective),
                   plan.header.worldSize, r.findings.size(), sizes.c_str());
  for (const Finding& f : r.findings) {
    text += "  " + formatFinding(f) + "\n";
    if (!f.buffer.empty()) text += "    buffer: " + f.buffer + (f.chunks.empty() ? "" : ", " + f.chunks) + "\n";
    if (f.other.valid()) text += "    other op: " + describeSite(f.other) + "\n";
    std::string when;
    if (f.call >= 0) when += strFormat("call %d", f.call);
    if (f.chunkBytes)
      when +=
          strFormat("%schunk size %llu bytes", when.empty() ? "" : ", ", static_cast<unsigned long long>(f.chunkBytes));
    if (!when.empty()) text += "    found at: " + when + "\n";
  }
  if (!r.sizeNote.empty()) text += "  " + r.sizeNote + "\n";
  return text;
}

}  // namespace mscclpp::plan::verify
