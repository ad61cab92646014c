#include "verify_test_plans.hpp"

#include "plan_test_util.hpp"

namespace verifytest {

using mscclpp::plan::verify::FindingKind;
using mscclpp::plan::verify::Result;

json local(const char* type, int index, int size) { return {{"type", type}, {"index", index}, {"size", size}}; }
json remote(int id, int index, int size) { return {{"buffer_id", id}, {"index", index}, {"size", size}}; }

json op(const std::string& name) { return {{"name", name}}; }

json sync(const std::string& name, int channel) {
  return {{"name", name}, {"channel_type", "memory"}, {"channel_ids", {channel}}};
}

json data(const std::string& name, std::vector<json> src, std::vector<json> dst, bool memory) {
  json o = {{"name", name}, {"src_buff", src}, {"dst_buff", dst}};
  if (memory) o["channel_type"] = "memory";
  return o;
}

json twoRankPlan(const std::string& name, const std::string& collective, bool inPlace, const std::string& protocol,
                 int inputChunks, int outputChunks, int scratchChunks, const std::vector<json>& ops0,
                 const std::vector<json>& ops1) {
  json gpus = json::array();
  for (int r = 0; r < 2; ++r) {
    const int peer = 1 - r;
    json remoteBuffers = json::array();
    for (const char* t : {"i", "o", "s"})
      remoteBuffers.push_back({{"rank", peer}, {"type", t}, {"access_channel_types", {"memory"}}});
    json tb = {
        {"id", 0},
        {"ops", r == 0 ? ops0 : ops1},
        {"channels", json::array({{{"channel_type", "memory"}, {"channel_ids", {0}}}})},
        {"remote_buffer_refs", json::array({{{"access_channel_type", "memory"}, {"remote_buffer_ids", {0, 1, 2}}}})}};
    gpus.push_back({{"id", r},
                    {"input_chunks", inputChunks},
                    {"output_chunks", outputChunks},
                    {"scratch_chunks", scratchChunks},
                    {"channels", json::array({{{"channel_type", "memory"}, {"connected_to", {peer}}}})},
                    {"remote_buffers", remoteBuffers},
                    {"semaphores", json::array()},
                    {"threadblocks", json::array({tb})}});
  }
  return {{"name", name}, {"collective", collective}, {"protocol", protocol}, {"inplace", inPlace}, {"gpus", gpus}};
}

json allgatherPut(const std::string& variant) {
  std::vector<json> ops[2];
  for (int r = 0; r < 2; ++r) {
    std::vector<json>& o = ops[r];
    if (variant == "wait-first") {
      o = {op("nop"), sync("rlxwait"), op("nop"), sync("rlxsignal")};
    } else {
      o = {op("nop"), sync("rlxsignal"), op("nop"), sync("rlxwait")};
    }
    o.push_back(op("nop"));
    o.push_back(data("copy", {local("i", 0)}, {local("o", r)}));
    o.push_back(data("put", {local("i", 0)}, {remote(1, variant == "shifted-put" ? 1 - r : r)}, true));
    if (variant != "no-nop-before-signal") o.push_back(op("nop"));
    if (variant != "no-signal-wait") {
      o.push_back(sync("signal"));
      o.push_back(sync("wait"));
    }
    o.push_back(op("nop"));
    if (variant == "extra-signal" && r == 0) o.push_back(sync("signal"));
  }
  return twoRankPlan("allgather_put_" + variant, "allgather", false, "Simple", 1, 2, 0, ops[0], ops[1]);
}

Result verify(const json& plan) { return mscclpp::plan::verify::verifyPlan(*plantest::load(plan)); }

bool has(const Result& r, FindingKind kind) {
  for (const auto& f : r.findings)
    if (f.kind == kind) return true;
  return false;
}

std::string text(const Result& r) {
  std::string s;
  for (const auto& f : r.findings) s += mscclpp::plan::verify::formatFinding(f) + "\n";
  return s;
}

}  // namespace verifytest
