// Collects findings in the order found, one per problem, at most Options::maxFindings.
// A race found again at another chunk size or call is the same finding.
#ifndef MSCCLPP_PLAN_VERIFY_FINDINGS_HPP_
#define MSCCLPP_PLAN_VERIFY_FINDINGS_HPP_

#include <string>
#include <unordered_set>
#include <vector>

#include "plan/verify/verify.hpp"

namespace mscclpp::plan::verify {

class FindingSink {
 public:
  explicit FindingSink(size_t limit) : limit_(limit) {}
  // key names the problem whatever the chunk size and call;
  // a repeated key is dropped.
  void add(const std::string& key, Finding finding);
  bool full() const { return findings_.size() >= limit_; }
  size_t count() const { return findings_.size(); }
  size_t dropped() const { return dropped_; }
  // The chunk size the next findings are tagged with.
  void setChunkBytes(uint64_t bytes) { chunkBytes_ = bytes; }
  std::vector<Finding> take() { return std::move(findings_); }

 private:
  size_t limit_;
  size_t dropped_ = 0;
  uint64_t chunkBytes_ = 0;
  std::unordered_set<std::string> keys_;
  std::vector<Finding> findings_;
};

// "r1.tb0.op3", a part of finding keys.
std::string siteKey(const OpSite& s);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_FINDINGS_HPP_
