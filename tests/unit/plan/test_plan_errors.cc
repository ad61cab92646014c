// One broken plan per validation rule, each made by mutating a small valid plan, with the exact error.
#include <catch2/catch.hpp>
#include <functional>

#include "mscclpp/errors.hpp"
#include "plan_test_util.hpp"

using plantest::json;

namespace {

struct Case {
  const char* rule;
  std::function<json()> base;
  std::function<void(json&)> mutate;
  const char* expected;
};

json& g(json& j, int r) { return j["gpus"][r]; }
json& tb(json& j, int r, int t) { return j["gpus"][r]["threadblocks"][t]; }
json& op(json& j, int r, int t, int i) { return j["gpus"][r]["threadblocks"][t]["ops"][i]; }
json ref(const char* type, int64_t index, int64_t size = 1) {
  return {{"type", type}, {"index", index}, {"size", size}};
}
json rref(int id, int index, int size = 1) { return {{"buffer_id", id}, {"index", index}, {"size", size}}; }

const std::function<json()> S = plantest::simplePlan;
const std::function<json()> P = plantest::packetPlan;

// 3 ranks; rank 0 has port channels to ranks 1 and 2 and their output buffers
// as port-reachable remote buffers; its threadblock lists port channels [0, 1]
// and remote buffers [0, 1].
json threeRankPort() {
  json j = plantest::minimalPlan("three", "custom", 3, 1, 1, false);
  g(j, 0)["channels"] = json::array({{{"channel_type", "port"}, {"connected_to", {1, 2}}}});
  g(j, 1)["channels"] = json::array({{{"channel_type", "port"}, {"connected_to", {0}}}});
  g(j, 2)["channels"] = json::array({{{"channel_type", "port"}, {"connected_to", {0}}}});
  g(j, 0)["remote_buffers"] = json::array({{{"rank", 1}, {"type", "o"}, {"access_channel_types", {"port"}}},
                                           {{"rank", 2}, {"type", "o"}, {"access_channel_types", {"port"}}}});
  tb(j, 0, 0)["channels"] = json::array({{{"channel_type", "port"}, {"channel_ids", {0, 1}}}});
  tb(j, 0, 0)["remote_buffer_refs"] = json::array({{{"access_channel_type", "port"}, {"remote_buffer_ids", {0, 1}}}});
  tb(j, 0, 0)["ops"].push_back({{"name", "put"},
                                {"channel_type", "port"},
                                {"channel_ids", {0}},
                                {"src_buff", {ref("i", 0)}},
                                {"dst_buff", {rref(0, 0)}}});
  return j;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // ---- header
      {"gpus required", S, [](json& j) { j.erase("gpus"); }, "t.json: missing required key \"gpus\""},
      {"gpus is an array", S, [](json& j) { j["gpus"] = json::object(); },
       "t.json: gpus is an object, expected an array"},
      {"gpus not empty", S, [](json& j) { j["gpus"] = json::array(); },
       "t.json: gpus is empty (a plan has at least one rank)"},
      {"name required", S, [](json& j) { j.erase("name"); }, "t.json: missing required key \"name\""},
      {"name is a string", S, [](json& j) { j["name"] = 3; }, "t.json: name=3 is a number, expected a string"},
      {"name not empty", S, [](json& j) { j["name"] = ""; }, "t.json: name=\"\" is empty"},
      {"collective known", S, [](json& j) { j["collective"] = "allreduse"; },
       "t.json: collective=\"allreduse\" is not one of allreduce, allgather, reducescatter, alltoall, sendrecv, "
       "broadcast, reduce, gather, scatter, custom, test, alltoallv, allgatherv, reducescatterv"},
      {"collective required", S, [](json& j) { j.erase("collective"); }, "t.json: missing required key \"collective\""},
      {"protocol known", S, [](json& j) { j["protocol"] = "ll"; }, "t.json: protocol=\"ll\" is not one of Simple, LL"},
      {"protocol required", S, [](json& j) { j.erase("protocol"); }, "t.json: missing required key \"protocol\""},
      {"inplace is a boolean", S, [](json& j) { j["inplace"] = "yes"; },
       "t.json: inplace=\"yes\" is a string, expected a boolean"},
      {"inplace required", S, [](json& j) { j.erase("inplace"); }, "t.json: missing required key \"inplace\""},
      {"threads per block in 1..1024", S, [](json& j) { j["num_threads_per_block"] = 2048; },
       "t.json: num_threads_per_block=2048 out of range (1..1024)"},
      {"threads per block positive", S, [](json& j) { j["num_threads_per_block"] = 0; },
       "t.json: num_threads_per_block=0 out of range (1..1024)"},
      {"buffer_alignment power of two", S, [](json& j) { j["buffer_alignment"] = 12; },
       "t.json: buffer_alignment=12 is not a power of two"},
      {"buffer_alignment not zero", S, [](json& j) { j["buffer_alignment"] = 0; },
       "t.json: buffer_alignment=0 is not a power of two"},
      {"double scratch is a boolean", S, [](json& j) { j["use_double_scratch_buffer"] = 1; },
       "t.json: use_double_scratch_buffer=1 is a number, expected a boolean"},
      {"size range ordered", S, [](json& j) { j["min_message_size"] = 100; j["max_message_size"] = 10; },
       "t.json: max_message_size=10 is smaller than min_message_size=100"},
      {"format_version known", S, [](json& j) { j["format_version"] = 3; },
       "t.json: format_version=3 is newer than this reader supports (2)"},
      {"tags is an array", S, [](json& j) { j["tags"] = "a"; }, "t.json: tags=\"a\" is a string, expected an array"},
      {"tags are strings", S, [](json& j) { j["tags"] = {"a", 3}; },
       "t.json: tags[1]=3 is a number, expected a string"},
      {"tags not empty", S, [](json& j) { j["tags"] = {""}; }, "t.json: tags[0]=\"\" is empty"},
      {"root in range", S, [](json& j) { j["root"] = 2; }, "t.json: root=2 out of range (the plan has 2 ranks)"},
      {"nranks_per_node in range", S, [](json& j) { j["nranks_per_node"] = 3; },
       "t.json: nranks_per_node=3 out of range (1..2)"},
      {"nranks_per_node divides", [] { return plantest::minimalPlan("m", "allgather", 4, 1, 4, false); },
       [](json& j) { j["nranks_per_node"] = 3; }, "t.json: nranks_per_node=3 does not divide the plan's 4 ranks"},
      // ---- numbers
      {"non-negative", S, [](json& j) { g(j, 0)["input_chunks"] = -1; }, "t.json: gpus[0].input_chunks=-1 is negative"},
      {"integer", S, [](json& j) { g(j, 0)["input_chunks"] = 1.5; },
       "t.json: gpus[0].input_chunks=1.5 is not an integer"},
      {"32 bits", S, [](json& j) { g(j, 0)["scratch_chunks"] = 4294967296ull; },
       "t.json: gpus[0].scratch_chunks=4294967296 does not fit in 32 bits (max 4294967295)"},
      // ---- ranks
      {"gpu is an object", S, [](json& j) { j["gpus"][1] = 7; }, "t.json: gpus[1]=7 is a number, expected an object"},
      {"gpus[r].id == r", S, [](json& j) { g(j, 1)["id"] = 0; },
       "t.json: gpus[1].id=0 does not match its position 1 in gpus (gpus[r].id must be r)"},
      {"id required", S, [](json& j) { g(j, 1).erase("id"); }, "t.json: gpus[1]: missing required key \"id\""},
      {"scratch_chunks required", S, [](json& j) { g(j, 0).erase("scratch_chunks"); },
       "t.json: gpus[0]: missing required key \"scratch_chunks\""},
      {"same input chunks", S, [](json& j) { g(j, 1)["input_chunks"] = 8; },
       "t.json: gpus[1].input_chunks=8 differs from gpus[0].input_chunks=4 (every rank must split its buffers into the "
       "same chunks)"},
      {"same output chunks", S, [](json& j) { g(j, 1)["output_chunks"] = 2; },
       "t.json: gpus[1].output_chunks=2 differs from gpus[0].output_chunks=4 (every rank must split its buffers into "
       "the same chunks)"},
      {"channels required", S, [](json& j) { g(j, 0).erase("channels"); },
       "t.json: gpus[0]: missing required key \"channels\""},
      {"channel type known", S, [](json& j) { g(j, 0)["channels"][0]["channel_type"] = "nvlink"; },
       "t.json: gpus[0].channels[0].channel_type=\"nvlink\" is not one of memory, port, switch"},
      {"channel peer in range", S, [](json& j) { g(j, 0)["channels"][0]["connected_to"] = {2}; },
       "t.json: gpus[0].channels[0].connected_to[0]=2 out of range (the plan has 2 ranks)"},
      {"channel peer not self", S, [](json& j) { g(j, 0)["channels"][1]["connected_to"] = {0}; },
       "t.json: gpus[0].channels[1].connected_to[0]=0 is rank 0 itself (a channel connects two different ranks)"},
      {"switch buffer_type required", S, [](json& j) { g(j, 0)["channels"][2].erase("buffer_type"); },
       "t.json: gpus[0].channels[2]: missing required key \"buffer_type\""},
      {"switch buffer_type known", S, [](json& j) { g(j, 0)["channels"][2]["buffer_type"] = "x"; },
       "t.json: gpus[0].channels[2].buffer_type=\"x\" is not one of i, o, s"},
      {"legacy buff agrees", S, [](json& j) { g(j, 0)["channels"][2]["buff"] = "o"; },
       "t.json: gpus[0].channels[2].buff=\"o\" disagrees with buffer_type=\"i\""},
      {"rank_groups not empty", S, [](json& j) { g(j, 0)["channels"][2]["rank_groups"] = json::array(); },
       "t.json: gpus[0].channels[2].rank_groups is empty (a switch channel binds at least one group)"},
      {"group size matches", S, [](json& j) { g(j, 0)["channels"][2]["rank_groups"][0]["size"] = 3; },
       "t.json: gpus[0].channels[2].rank_groups[0].size=3 does not match the 2 ranks listed"},
      {"group member in range", S, [](json& j) { g(j, 0)["channels"][2]["rank_groups"][0]["ranks"] = {0, 5}; },
       "t.json: gpus[0].channels[2].rank_groups[0].ranks[1]=5 out of range (the plan has 2 ranks)"},
      {"group members distinct", S, [](json& j) { g(j, 0)["channels"][2]["rank_groups"][0]["ranks"] = {0, 0}; },
       "t.json: gpus[0].channels[2].rank_groups[0].ranks[1]=0 appears twice in the group"},
      {"group contains its rank", S,
       [](json& j) {
         g(j, 0)["channels"][2]["rank_groups"][0]["ranks"] = {1};
         g(j, 0)["channels"][2]["rank_groups"][0]["size"] = 1;
       },
       "t.json: gpus[0].channels[2].rank_groups[0].ranks does not contain rank 0, which declares the group"},
      {"switch groups declared by every member", S, [](json& j) { g(j, 1)["channels"].erase(2); },
       "t.json: gpus[0].channels[2].rank_groups[0]: rank 0 binds ranks [0,1] on its input buffer 1 time(s) but rank 1 "
       "does 0 time(s) (every member of a switch group declares the same switch channels)"},
      {"remote buffer owner in range", S, [](json& j) { g(j, 0)["remote_buffers"][0]["rank"] = 2; },
       "t.json: gpus[0].remote_buffers[0].rank=2 out of range (the plan has 2 ranks)"},
      {"remote buffer owner not self", S, [](json& j) { g(j, 0)["remote_buffers"][0]["rank"] = 0; },
       "t.json: gpus[0].remote_buffers[0].rank=0 is rank 0 itself (remote buffers belong to other ranks)"},
      {"remote buffer type known", S, [](json& j) { g(j, 0)["remote_buffers"][0]["type"] = "x"; },
       "t.json: gpus[0].remote_buffers[0].type=\"x\" is not one of i, o, s"},
      {"remote buffer access not empty", S,
       [](json& j) { g(j, 0)["remote_buffers"][0]["access_channel_types"] = json::array(); },
       "t.json: gpus[0].remote_buffers[0].access_channel_types is empty (a remote buffer is reached through memory or "
       "port channels)"},
      {"remote buffer access type known", S,
       [](json& j) { g(j, 0)["remote_buffers"][0]["access_channel_types"] = {"switch"}; },
       "t.json: gpus[0].remote_buffers[0].access_channel_types[0]=\"switch\" is not one of memory, port"},
      {"remote buffer reachable", S,
       [](json& j) {
         g(j, 0)["channels"].erase(1);
         g(j, 1)["channels"].erase(1);
       },
       "t.json: gpus[0].remote_buffers[0].access_channel_types[1]=\"port\" but rank 0 has no port channel to rank 1, "
       "the "
       "buffer's owner"},
      {"semaphore init_value non-negative", S, [](json& j) { g(j, 0)["semaphores"][0]["init_value"] = -1; },
       "t.json: gpus[0].semaphores[0].init_value=-1 is negative"},
      {"semaphore init_value required", S, [](json& j) { g(j, 0)["semaphores"][1] = json::object(); },
       "t.json: gpus[0].semaphores[1]: missing required key \"init_value\""},
      {"threadblocks required", S, [](json& j) { g(j, 0).erase("threadblocks"); },
       "t.json: gpus[0]: missing required key \"threadblocks\""},
      {"threadblocks is an array", S, [](json& j) { g(j, 0)["threadblocks"] = json::object(); },
       "t.json: gpus[0].threadblocks is an object, expected an array"},
      // ---- threadblocks
      {"threadblock is an object", S, [](json& j) { g(j, 0)["threadblocks"][1] = "tb"; },
       "t.json: gpus[0].threadblocks[1]=\"tb\" is a string, expected an object"},
      {"threadblocks[i].id == i", S, [](json& j) { tb(j, 0, 1)["id"] = 5; },
       "t.json: gpus[0].threadblocks[1].id=5 does not match its position 1 in threadblocks (threadblocks[i].id must "
       "be i)"},
      {"threadblock channels required", S, [](json& j) { tb(j, 0, 1).erase("channels"); },
       "t.json: gpus[0].threadblocks[1]: missing required key \"channels\""},
      {"threadblock channel type", S, [](json& j) { tb(j, 0, 0)["channels"][0]["channel_type"] = "none"; },
       "t.json: gpus[0].threadblocks[0].channels[0].channel_type=\"none\" is not one of memory, port, switch"},
      {"threadblock channel in range", S, [](json& j) { tb(j, 0, 0)["channels"][0]["channel_ids"] = {1}; },
       "t.json: gpus[0].threadblocks[0].channels[0].channel_ids[0]=1 out of range (rank 0 declares 1 memory channels)"},
      {"threadblock switch buffer agrees", S, [](json& j) { tb(j, 0, 1)["channels"][0]["buff"] = "o"; },
       "t.json: gpus[0].threadblocks[1].channels[0].buff=\"o\" does not match switch channel 0, which binds the "
       "input buffer"},
      {"remote ref access type", S,
       [](json& j) { tb(j, 0, 0)["remote_buffer_refs"][0]["access_channel_type"] = "switch"; },
       "t.json: gpus[0].threadblocks[0].remote_buffer_refs[0].access_channel_type=\"switch\" is not one of memory, "
       "port"},
      {"remote ref in range", S, [](json& j) { tb(j, 0, 0)["remote_buffer_refs"][0]["remote_buffer_ids"] = {2}; },
       "t.json: gpus[0].threadblocks[0].remote_buffer_refs[0].remote_buffer_ids[0]=2 out of range (rank 0 declares 2 "
       "remote buffers)"},
      {"remote ref reachable by its type", S,
       [](json& j) { tb(j, 0, 0)["remote_buffer_refs"][1]["remote_buffer_ids"] = {1}; },
       "t.json: gpus[0].threadblocks[0].remote_buffer_refs[1].remote_buffer_ids[0]=1 is rank 1's input buffer, which "
       "gpus[0].remote_buffers[1] does not make reachable through port channels"},
      {"ops required", S, [](json& j) { tb(j, 0, 0).erase("ops"); },
       "t.json: gpus[0].threadblocks[0]: missing required key \"ops\""},
      // ---- ops
      {"op is an object", S, [](json& j) { op(j, 0, 0, 0) = 5; },
       "t.json: gpus[0].threadblocks[0].ops[0]=5 is a number, expected an object"},
      {"op name required", S, [](json& j) { op(j, 0, 0, 0).erase("name"); },
       "t.json: gpus[0].threadblocks[0].ops[0]: missing required key \"name\""},
      {"op name known", S, [](json& j) { op(j, 0, 0, 2)["name"] = "putt"; },
       "t.json: gpus[0].threadblocks[0].ops[2].name=\"putt\" is not a known operation"},
      {"packet ops need LL", S, [](json& j) { op(j, 0, 0, 1)["name"] = "cpkt"; },
       "t.json: gpus[0].threadblocks[0].ops[1].name=\"cpkt\" is a packet operation but the plan's protocol is Simple "
       "(packet plans use protocol \"LL\")"},
      {"channel_type known", S, [](json& j) { op(j, 0, 0, 3)["channel_type"] = "nvlink"; },
       "t.json: gpus[0].threadblocks[0].ops[3].channel_type=\"nvlink\" is not one of none, memory, port, switch"},
      {"local op uses no channel", S, [](json& j) { op(j, 0, 0, 1)["channel_type"] = "memory"; },
       "t.json: gpus[0].threadblocks[0].ops[1].channel_type=\"memory\" is not allowed for copy (it uses no channel)"},
      {"channel op needs channel_type", S, [](json& j) { op(j, 0, 0, 3).erase("channel_type"); },
       "t.json: gpus[0].threadblocks[0].ops[3]: signal needs channel_type memory or port"},
      {"channel op with channel_type none", S, [](json& j) { op(j, 0, 0, 3)["channel_type"] = "none"; },
       "t.json: gpus[0].threadblocks[0].ops[3].channel_type=\"none\" but signal needs channel_type memory or port"},
      {"relaxed signal on memory only", S, [](json& j) {
         op(j, 0, 0, 3)["name"] = "rlxsignal";
         op(j, 0, 0, 3)["channel_type"] = "port";
       },
       "t.json: gpus[0].threadblocks[0].ops[3].channel_type=\"port\" is not allowed for rlxsignal (memory)"},
      {"flush on port only", S, [](json& j) { op(j, 0, 0, 7)["channel_type"] = "memory"; },
       "t.json: gpus[0].threadblocks[0].ops[7].channel_type=\"memory\" is not allowed for flush (port)"},
      {"channel_ids required", S, [](json& j) { op(j, 0, 0, 3).erase("channel_ids"); },
       "t.json: gpus[0].threadblocks[0].ops[3]: signal needs channel_ids"},
      {"channel_ids not empty", S, [](json& j) { op(j, 0, 0, 3)["channel_ids"] = json::array(); },
       "t.json: gpus[0].threadblocks[0].ops[3].channel_ids is empty (signal needs at least one channel)"},
      {"channel_ids in the threadblock's list", S, [](json& j) { op(j, 0, 0, 3)["channel_ids"] = {1}; },
       "t.json: gpus[0].threadblocks[0].ops[3].channel_ids[0]=1 out of range (the threadblock lists 1 memory "
       "channels)"},
      {"src_buff required", S, [](json& j) { op(j, 0, 0, 1).erase("src_buff"); },
       "t.json: gpus[0].threadblocks[0].ops[1]: copy needs src_buff"},
      {"src_buff is an array", S, [](json& j) { op(j, 0, 0, 1)["src_buff"] = ref("i", 0); },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff is an object, expected an array"},
      {"copy has one src", S, [](json& j) { op(j, 0, 0, 1)["src_buff"].push_back(ref("i", 1)); },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff has 2 reference(s), copy takes exactly 1"},
      {"re has two or more srcs", S, [](json& j) { op(j, 0, 0, 5)["src_buff"].erase(1); },
       "t.json: gpus[0].threadblocks[0].ops[5].src_buff has 1 reference(s), re needs at least 2"},
      {"recpkt has two dsts", P, [](json& j) { op(j, 0, 0, 7)["dst_buff"].push_back(ref("s", 2)); },
       "t.json: gpus[0].threadblocks[0].ops[7].dst_buff has 3 reference(s), recpkt takes exactly 2"},
      {"recspkt has a remote dst", P, [](json& j) { op(j, 0, 0, 8)["dst_buff"].erase(2); },
       "t.json: gpus[0].threadblocks[0].ops[8].dst_buff has 2 reference(s), recspkt needs at least 3"},
      {"get pairs srcs and dsts", S, [](json& j) {
         op(j, 0, 0, 2) = {{"name", "get"}, {"channel_type", "memory"}, {"src_buff", {rref(0, 1), rref(0, 2)}},
                           {"dst_buff", {ref("i", 1)}}};
       },
       "t.json: gpus[0].threadblocks[0].ops[2]: get has 2 src_buff and 1 dst_buff references; they must pair up one "
       "to one"},
      {"put pairs srcs and dsts or has one src", S, [](json& j) {
         op(j, 0, 0, 2)["src_buff"] = {ref("i", 1), ref("i", 2)};
         op(j, 0, 0, 2)["dst_buff"] = {rref(0, 1), rref(0, 2), rref(0, 3)};
       },
       "t.json: gpus[0].threadblocks[0].ops[2]: put has 2 src_buff and 3 dst_buff references; they must pair up one to "
       "one, or src_buff must have exactly one"},
      {"reference kind per position", S, [](json& j) { op(j, 0, 0, 10)["src_buff"][1] = ref("s", 3); },
       "t.json: gpus[0].threadblocks[0].ops[10].src_buff[1]: rre expects a remote reference ({buffer_id,index,size}) "
       "here, got a local reference"},
      {"local where a remote is expected", S, [](json& j) { op(j, 0, 0, 2)["src_buff"][0] = rref(0, 1); },
       "t.json: gpus[0].threadblocks[0].ops[2].src_buff[0]: put expects a local reference ({type,index,size}) here, "
       "got "
       "a remote reference"},
      {"reference is one kind", S, [](json& j) { op(j, 0, 0, 1)["src_buff"][0]["buffer_id"] = 0; },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff[0]: mixes type and buffer_id (a reference is local {type}, "
       "remote {buffer_id} or multicast {switch_channel_id})"},
      {"reference names a buffer", S, [](json& j) { op(j, 0, 0, 1)["src_buff"][0].erase("type"); },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff[0]: is not a buffer reference (it needs one of type, "
       "buffer_id, "
       "switch_channel_id)"},
      {"reference index required", S, [](json& j) { op(j, 0, 0, 1)["src_buff"][0].erase("index"); },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff[0]: missing required key \"index\""},
      {"local buffer type known", S, [](json& j) { op(j, 0, 0, 1)["src_buff"][0]["type"] = "x"; },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff[0].type=\"x\" is not one of i, o, s"},
      {"local reference rank is the op's rank", S, [](json& j) { op(j, 0, 0, 1)["src_buff"][0]["rank"] = 1; },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff[0].rank=1 is not the rank of this op (0)"},
      {"index in range (local)", S, [](json& j) { op(j, 1, 0, 5)["src_buff"][1]["index"] = 40; },
       "t.json: gpus[1].threadblocks[0].ops[5].src_buff[1].index=40 out of range (scratch has 4 chunks)"},
      {"index+size in range (local)", S, [](json& j) { op(j, 0, 0, 1)["src_buff"][0] = ref("i", 3, 2); },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff[0].size=2 out of range (index 3 + size 2 exceeds the 4 "
       "chunks of "
       "input)"},
      {"size not zero", S, [](json& j) { op(j, 0, 0, 1)["src_buff"][0]["size"] = 0; },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff[0].size=0 is empty (a reference covers at least one chunk)"},
      {"index+size does not wrap", S, [](json& j) { op(j, 0, 0, 1)["src_buff"][0] = ref("i", 3, 4294967295ll); },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff[0].size=4294967295 out of range (index 3 + size 4294967295 "
       "exceeds the 4 chunks of input)"},
      {"largest index", S, [](json& j) { op(j, 0, 0, 1)["dst_buff"][0] = ref("o", 4294967295ll); },
       "t.json: gpus[0].threadblocks[0].ops[1].dst_buff[0].index=4294967295 out of range (output has 4 chunks)"},
      {"buffer_id in the threadblock's list", S, [](json& j) { op(j, 0, 0, 2)["dst_buff"][0]["buffer_id"] = 2; },
       "t.json: gpus[0].threadblocks[0].ops[2].dst_buff[0].buffer_id=2 out of range (the threadblock lists 2 remote "
       "buffers for memory channels)"},
      {"remote index vs the remote rank's chunks", S, [](json& j) {
         g(j, 1)["scratch_chunks"] = 2;
         op(j, 0, 0, 2)["dst_buff"][0]["index"] = 2;
       },
       "t.json: gpus[0].threadblocks[0].ops[2].dst_buff[0].index=2 out of range (rank 1's scratch has 2 chunks)"},
      {"switch_channel_id in the threadblock's list", S,
       [](json& j) { op(j, 0, 1, 2)["src_buff"][0]["switch_channel_id"] = 1; },
       "t.json: gpus[0].threadblocks[1].ops[2].src_buff[0].switch_channel_id=1 out of range (the threadblock lists 1 "
       "switch channels)"},
      {"multicast index vs every member's chunks", S, [](json& j) {
         for (int r = 0; r < 2; ++r) g(j, r)["channels"][2]["buffer_type"] = "s";
         g(j, 1)["scratch_chunks"] = 2;
         op(j, 0, 0, 6)["dst_buff"][0]["index"] = 1;
         op(j, 0, 1, 2)["src_buff"][0]["index"] = 3;
       },
       "t.json: gpus[0].threadblocks[1].ops[2].src_buff[0].index=3 out of range (rank 1's scratch (bound by switch "
       "channel 0) has 2 chunks)"},
      // ---- packets only on scratch, on the packet side of each op
      {"cpkt writes packets to scratch", P, [](json& j) { op(j, 0, 0, 3)["dst_buff"][0]["type"] = "o"; },
       "t.json: gpus[0].threadblocks[0].ops[3].dst_buff[0].type=\"o\" is not scratch: cpkt keeps LL packets here, "
       "which "
       "live in scratch (\"s\")"},
      {"upkt reads packets from scratch", P, [](json& j) { op(j, 0, 0, 4)["src_buff"][0]["type"] = "i"; },
       "t.json: gpus[0].threadblocks[0].ops[4].src_buff[0].type=\"i\" is not scratch: upkt keeps LL packets here, "
       "which "
       "live in scratch (\"s\")"},
      {"repkt reads packets from scratch", P, [](json& j) { op(j, 0, 0, 5)["src_buff"][1]["type"] = "i"; },
       "t.json: gpus[0].threadblocks[0].ops[5].src_buff[1].type=\"i\" is not scratch: repkt keeps LL packets here, "
       "which "
       "live in scratch (\"s\")"},
      {"rppkt reads packets from scratch", P, [](json& j) { op(j, 0, 0, 2)["src_buff"][0]["type"] = "o"; },
       "t.json: gpus[0].threadblocks[0].ops[2].src_buff[0].type=\"o\" is not scratch: rppkt keeps LL packets here, "
       "which live in scratch (\"s\")"},
      {"ppkt writes packets to remote scratch", P, [](json& j) {
         g(j, 0)["remote_buffers"].push_back({{"rank", 1}, {"type", "o"}, {"access_channel_types", {"memory"}}});
         tb(j, 0, 0)["remote_buffer_refs"][0]["remote_buffer_ids"] = {0, 1};
         op(j, 0, 0, 0)["dst_buff"][0]["buffer_id"] = 1;
       },
       "t.json: gpus[0].threadblocks[0].ops[0].dst_buff[0].buffer_id=1 is rank 1's output buffer: ppkt writes LL "
       "packets, which must go to a scratch buffer"},
      {"gstorepkt multicasts scratch", P, [](json& j) {
         for (int r = 0; r < 2; ++r) g(j, r)["channels"][2]["buffer_type"] = "i";
       },
       "t.json: gpus[0].threadblocks[0].ops[9].dst_buff[0].switch_channel_id=0 binds the input buffer: gstorepkt "
       "carries LL packets, which live in scratch"},
      {"ppkt over port sends packets from scratch", P, [](json& j) { op(j, 0, 0, 1)["src_buff"][0]["type"] = "i"; },
       "t.json: gpus[0].threadblocks[0].ops[1].src_buff[0].type=\"i\" is not scratch: ppkt over port channels sends LL "
       "packets already in scratch (\"s\")"},
      // ---- port requests: one channel per dst, leading to the dst's owner
      {"pws needs channel_ids", S, [](json& j) { op(j, 0, 0, 6).erase("channel_ids"); },
       "t.json: gpus[0].threadblocks[0].ops[6]: pws needs channel_ids"},
      {"put over port needs channel_ids", S, [](json& j) { op(j, 0, 0, 2)["channel_type"] = "port"; },
       "t.json: gpus[0].threadblocks[0].ops[2]: put over port channels needs channel_ids (one per dst_buff reference)"},
      {"one port channel per dst", S, [](json& j) { op(j, 0, 0, 6)["channel_ids"] = {0, 0}; },
       "t.json: gpus[0].threadblocks[0].ops[6].channel_ids has 2 ids, pws over port channels needs one per dst_buff "
       "reference (1)"},
      {"port channel leads to the dst's owner", threeRankPort, [](json& j) { op(j, 0, 0, 1)["channel_ids"] = {1}; },
       "t.json: gpus[0].threadblocks[0].ops[1].dst_buff[0].buffer_id=0 is rank 1's output buffer, but channel_ids[0] "
       "leads to rank 2"},
      // ---- channel pairing: a wait needs a listed partner
      {"wait on a channel the peer does not list", S, [](json& j) {
         g(j, 0)["channels"][0]["connected_to"] = {1, 1};
         tb(j, 0, 0)["channels"][0]["channel_ids"] = {0, 1};
         op(j, 0, 0, 4)["channel_ids"] = {1};
       },
       "t.json: gpus[0].threadblocks[0].ops[4].channel_ids[0]: wait on memory channel 1 (#1 to rank 1) can never "
       "complete: rank 1 lists 1 memory channel(s) to rank 0, so nothing signals it"},
      // ---- reduce ops, thread-block groups, barriers, semaphores, pipelines
      {"reduce_op known", S, [](json& j) { op(j, 0, 0, 5)["reduce_op"] = "avg"; },
       "t.json: gpus[0].threadblocks[0].ops[5].reduce_op=\"avg\" is not one of sum, prod, min, max"},
      {"tbg_info is an object", S, [](json& j) { op(j, 0, 0, 1)["tbg_info"] = 2; },
       "t.json: gpus[0].threadblocks[0].ops[1].tbg_info=2 is a number, expected an object"},
      {"tbg_size positive (pipeline body path)", S,
       [](json& j) { op(j, 0, 1, 3)["ops"][0]["tbg_info"]["tbg_size"] = 0; },
       "t.json: gpus[0].threadblocks[1].ops[3].ops[0].tbg_info.tbg_size=0 out of range (1..65535)"},
      {"tb_id below tbg_size", S, [](json& j) { op(j, 0, 0, 1)["tbg_info"] = {{"tb_id", 2}, {"tbg_size", 2}}; },
       "t.json: gpus[0].threadblocks[0].ops[1].tbg_info.tb_id=2 out of range (tbg_size is 2)"},
      {"barrier_id limit", S, [](json& j) { op(j, 0, 0, 8)["barrier_id"] = 70000; },
       "t.json: gpus[0].threadblocks[0].ops[8].barrier_id=70000 out of range (barrier ids are 0..65535)"},
      {"barrier_id required", S, [](json& j) { op(j, 0, 0, 8).erase("barrier_id"); },
       "t.json: gpus[0].threadblocks[0].ops[8]: missing required key \"barrier_id\""},
      {"barrier num_threadblocks in range", S, [](json& j) { op(j, 0, 0, 8)["num_threadblocks"] = 3; },
       "t.json: gpus[0].threadblocks[0].ops[8].num_threadblocks=3 out of range (rank 0 has 2 threadblocks)"},
      {"barrier num_threadblocks consistent", S, [](json& j) { op(j, 0, 1, 0)["num_threadblocks"] = 1; },
       "t.json: gpus[0].threadblocks[1].ops[0].num_threadblocks=1 differs from num_threadblocks=2 used with "
       "barrier_id=0 "
       "at gpus[0].threadblocks[0].ops[8]"},
      {"barrier used by num_threadblocks threadblocks", S, [](json& j) { op(j, 0, 1, 0) = {{"name", "nop"}}; },
       "t.json: gpus[0].threadblocks: barrier_id=0 declares num_threadblocks=2 but 1 threadblock(s) of rank 0 use it "
       "(0)"},
      {"semaphore_ids required", S, [](json& j) { op(j, 0, 0, 9).erase("semaphore_ids"); },
       "t.json: gpus[0].threadblocks[0].ops[9]: missing required key \"semaphore_ids\""},
      {"semaphore_ids not empty", S, [](json& j) { op(j, 0, 0, 9)["semaphore_ids"] = json::array(); },
       "t.json: gpus[0].threadblocks[0].ops[9].semaphore_ids is empty (sem_release needs at least one semaphore)"},
      {"semaphore_ids in range", S, [](json& j) { op(j, 0, 0, 9)["semaphore_ids"] = {2}; },
       "t.json: gpus[0].threadblocks[0].ops[9].semaphore_ids[0]=2 out of range (rank 0 declares 2 semaphores)"},
      {"pipeline needs iter_context", S, [](json& j) { op(j, 0, 1, 3).erase("iter_context"); },
       "t.json: gpus[0].threadblocks[1].ops[3]: missing required key \"iter_context\""},
      {"pipeline unit_size positive", S, [](json& j) { op(j, 0, 1, 3)["iter_context"]["unit_size"] = 0; },
       "t.json: gpus[0].threadblocks[1].ops[3].iter_context.unit_size=0 must be positive"},
      {"pipeline num_chunks positive", S, [](json& j) { op(j, 0, 1, 3)["iter_context"]["num_chunks"] = 0; },
       "t.json: gpus[0].threadblocks[1].ops[3].iter_context.num_chunks=0 must be positive"},
      {"pipeline needs ops", S, [](json& j) { op(j, 0, 1, 3).erase("ops"); },
       "t.json: gpus[0].threadblocks[1].ops[3]: missing required key \"ops\""},
      {"no nested pipelines", S, [](json& j) {
         op(j, 0, 1, 3)["ops"][0] = {
             {"name", "pipeline"}, {"iter_context", {{"unit_size", 1}, {"num_chunks", 1}}}, {"ops", json::array()}};
       },
       "t.json: gpus[0].threadblocks[1].ops[3].ops[0].name=\"pipeline\" inside a pipeline: nested pipelines are not "
       "supported"},
      {"pipeline body ops are checked", S, [](json& j) { op(j, 0, 1, 3)["ops"][1]["src_buff"][0]["index"] = 9; },
       "t.json: gpus[0].threadblocks[1].ops[3].ops[1].src_buff[0].index=9 out of range (input has 4 chunks)"},
      // ---- the unfused glre form
      {"unfused glre needs channel_ids", P, [](json& j) { op(j, 0, 0, 10).erase("channel_ids"); },
       "t.json: gpus[0].threadblocks[0].ops[10]: glre with dst_chunk needs channel_ids (the switch channel it loads "
       "from)"},
      {"unfused glre buffer_type matches", P, [](json& j) { op(j, 0, 0, 10)["buffer_type"] = "i"; },
       "t.json: gpus[0].threadblocks[0].ops[10].buffer_type=\"i\" does not match switch channel 0, which binds the "
       "scratch buffer"},
      {"unfused glre offset in range", P, [](json& j) { op(j, 0, 0, 10)["buffer_offset"] = 4; },
       "t.json: gpus[0].threadblocks[0].ops[10].buffer_offset=4 out of range (rank 0's scratch (bound by switch "
       "channel "
       "0) has 4 chunks)"},
      {"unfused glre dst_chunk is this rank's", P, [](json& j) { op(j, 0, 0, 10)["dst_chunk"]["rank"] = 1; },
       "t.json: gpus[0].threadblocks[0].ops[10].dst_chunk.rank=1 is not the rank of this op (0)"},
  };
  return all;
}

}  // namespace

TEST_CASE("each validation rule rejects its plan with the exact error", "[plan][errors]") {
  for (const Case& c : cases()) {
    json j = c.base();
    REQUIRE(plantest::loadError(j) == "");  // the base is valid
    c.mutate(j);
    INFO("rule: " << c.rule);
    CHECK(plantest::loadError(j) == c.expected);
  }
}

TEST_CASE("onlyRank keeps cross-rank rules, skips other ranks' ops", "[plan][errors]") {
  json j = plantest::simplePlan();
  g(j, 1)["channels"].erase(2);  // rank 1 leaves rank 0's switch group
  CHECK(plantest::loadError(j, 1).find("every member of a switch group declares the same switch channels") !=
        std::string::npos);
  json k = plantest::simplePlan();
  op(k, 1, 0, 1)["src_buff"][0]["index"] = 40;  // a bad op of rank 1
  CHECK(plantest::loadError(k, 0) == "");
  CHECK(plantest::loadError(k, 1) ==
        "t.json: gpus[1].threadblocks[0].ops[1].src_buff[0].index=40 out of range (input has 4 chunks)");
  CHECK(plantest::loadError(k) == plantest::loadError(k, 1));
}

TEST_CASE("numbers: 64-bit limits, exponents and signs", "[plan][errors]") {
  auto withText = [](json j, const std::string& from, const std::string& to) {
    std::string text = j.dump();
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    try {
      mscclpp::plan::loadPlanJson(text, "n.json");
    } catch (const mscclpp::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  json j = plantest::simplePlan();
  j["max_message_size"] = 12345678;
  CHECK(withText(j, "12345678", "18446744073709551615") == "");
  CHECK(withText(j, "12345678", "18446744073709551616") ==
        "n.json: max_message_size=18446744073709551616 does not fit in 64 bits (max 18446744073709551615)");
  CHECK(withText(j, "12345678", "1e30") == "n.json: max_message_size=1e30 is not an integer");
  CHECK(withText(j, "12345678", "4.0") == "n.json: max_message_size=4.0 is not an integer");
  CHECK(withText(j, "12345678", "-0") == "");
  CHECK(withText(j, "12345678", "-99999999999999999999999") ==
        "n.json: max_message_size=-99999999999999999999999 is negative");
}
