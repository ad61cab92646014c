// Small hand-written plans for the verifier tests: a correct 2-rank plan per
// pattern and the ways to break it. Each builder returns plan JSON (nlohmann)
// that loads.
#ifndef MSCCLPP_TESTS_UNIT_PLAN_VERIFY_TEST_PLANS_HPP_
#define MSCCLPP_TESTS_UNIT_PLAN_VERIFY_TEST_PLANS_HPP_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/verify/verify.hpp"

namespace verifytest {

using nlohmann::json;

json local(const char* type, int index, int size = 1);
json remote(int id, int index, int size = 1);

// A 2-rank plan of `collective` whose rank r runs the ops ops(r) in one
// threadblock with one memory channel to the peer and remote buffers {peer
// input, peer output, peer scratch} (ids 0, 1, 2).
json twoRankPlan(const std::string& name, const std::string& collective, bool inPlace, const std::string& protocol,
                 int inputChunks, int outputChunks, int scratchChunks, const std::vector<json>& ops0,
                 const std::vector<json>& ops1);

json op(const std::string& name);                     // nop, barrier-free ops without fields
json sync(const std::string& name, int channel = 0);  // signal/wait/rlxsignal/rlxwait on a memory channel
json data(const std::string& name, std::vector<json> src, std::vector<json> dst, bool memory = false);

// Out-of-place allgather on 2 ranks: a relaxed barrier, the local copy, a put of the input into the
// peer's output, then signal/wait. `variant` breaks it:
//   "ok", "no-nop-before-signal", "no-signal-wait", "shifted-put", "extra-signal", "wait-first"
json allgatherPut(const std::string& variant);

// The plan's verification with the default options.
mscclpp::plan::verify::Result verify(const json& plan);
// Whether a finding of the kind is among the result's.
bool has(const mscclpp::plan::verify::Result& r, mscclpp::plan::verify::FindingKind kind);
// All findings, one per line (for INFO).
std::string text(const mscclpp::plan::verify::Result& r);

}  // namespace verifytest

#endif  // MSCCLPP_TESTS_UNIT_PLAN_VERIFY_TEST_PLANS_HPP_
