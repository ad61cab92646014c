#include "plan_test_util.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "mscclpp/errors.hpp"

namespace plantest {
namespace {

json local(const char* type, int index, int size = 1) { return {{"type", type}, {"index", index}, {"size", size}}; }
json remote(int id, int index, int size = 1) { return {{"buffer_id", id}, {"index", index}, {"size", size}}; }
json multicast(int id, int index, int size = 1) {
  return {{"switch_channel_id", id}, {"index", index}, {"size", size}};
}

json simpleRank(int r) {
  const int peer = 1 - r;
  json tb0 = {
      {"id", 0},
      {"channels", json::array({{{"channel_type", "memory"}, {"channel_ids", {0}}},
                                {{"channel_type", "port"}, {"channel_ids", {0}}}})},
      {"remote_buffer_refs", json::array({{{"access_channel_type", "memory"}, {"remote_buffer_ids", {0, 1}}},
                                          {{"access_channel_type", "port"}, {"remote_buffer_ids", {0}}}})},
      {"ops",
       json::array({
           {{"name", "nop"}},
           {{"name", "copy"}, {"src_buff", {local("i", 0)}}, {"dst_buff", {local("s", 0)}}},
           {{"name", "put"}, {"channel_type", "memory"}, {"src_buff", {local("i", 1)}}, {"dst_buff", {remote(0, 1)}}},
           {{"name", "signal"}, {"channel_type", "memory"}, {"channel_ids", {0}}},
           {{"name", "wait"}, {"channel_type", "memory"}, {"channel_ids", {0}}},
           {{"name", "re"},
            {"reduce_op", "sum"},
            {"src_buff", {local("i", 0), local("s", 0)}},
            {"dst_buff", {local("i", 0)}}},
           {{"name", "pws"},
            {"channel_type", "port"},
            {"channel_ids", {0}},
            {"src_buff", {local("i", 2)}},
            {"dst_buff", {remote(0, 2)}}},
           {{"name", "flush"}, {"channel_type", "port"}, {"channel_ids", {0}}},
           {{"name", "barrier"}, {"barrier_id", 0}, {"num_threadblocks", 2}},
           {{"name", "sem_release"}, {"semaphore_ids", {0}}},
           {{"name", "rre"},
            {"channel_type", "memory"},
            {"reduce_op", "sum"},
            {"src_buff", {local("i", 3), remote(1, 3)}},
            {"dst_buff", {local("o", 3)}}},
       })}};
  json tb1 = {{"id", 1},
              {"channels", json::array({{{"channel_type", "switch"}, {"channel_ids", {0}}}})},
              {"ops", json::array({
                          {{"name", "barrier"}, {"barrier_id", 0}, {"num_threadblocks", 2}},
                          {{"name", "sem_acquire"}, {"semaphore_ids", {0}}},
                          {{"name", "glres"},
                           {"channel_type", "switch"},
                           {"src_buff", {multicast(0, 0)}},
                           {"dst_buff", {multicast(0, 0)}}},
                          {{"name", "pipeline"},
                           {"iter_context", {{"unit_size", 1024}, {"num_chunks", 1}}},
                           {"ops", json::array({
                                       {{"name", "copy"},
                                        {"src_buff", {local("i", 1)}},
                                        {"dst_buff", {local("o", 1)}},
                                        {"tbg_info", {{"tb_id", 0}, {"tbg_size", 1}}}},
                                       {{"name", "gstore"},
                                        {"channel_type", "switch"},
                                        {"src_buff", {local("i", 2)}},
                                        {"dst_buff", {multicast(0, 2)}}},
                                   })}},
                      })}};
  return {{"id", r},
          {"input_chunks", 4},
          {"output_chunks", 4},
          {"scratch_chunks", 4},
          {"channels", json::array({{{"channel_type", "memory"}, {"connected_to", {peer}}},
                                    {{"channel_type", "port"}, {"connected_to", {peer}}},
                                    {{"channel_type", "switch"},
                                     {"buffer_type", "i"},
                                     {"rank_groups", json::array({{{"size", 2}, {"ranks", {0, 1}}}})}}})},
          {"remote_buffers", json::array({{{"rank", peer}, {"type", "s"}, {"access_channel_types", {"memory", "port"}}},
                                          {{"rank", peer}, {"type", "i"}, {"access_channel_types", {"memory"}}}})},
          {"semaphores", json::array({{{"init_value", 0}}, {{"init_value", 1}}})},
          {"threadblocks", json::array({tb0, tb1})}};
}

json packetRank(int r) {
  const int peer = 1 - r;
  json tb0 = {
      {"id", 0},
      {"channels", json::array({{{"channel_type", "memory"}, {"channel_ids", {0}}},
                                {{"channel_type", "port"}, {"channel_ids", {0}}},
                                {{"channel_type", "switch"}, {"channel_ids", {0}}}})},
      {"remote_buffer_refs", json::array({{{"access_channel_type", "memory"}, {"remote_buffer_ids", {0}}},
                                          {{"access_channel_type", "port"}, {"remote_buffer_ids", {0}}}})},
      {"ops",
       json::array({
           {{"name", "ppkt"}, {"channel_type", "memory"}, {"src_buff", {local("i", 0)}}, {"dst_buff", {remote(0, 0)}}},
           {{"name", "ppkt"},
            {"channel_type", "port"},
            {"channel_ids", {0}},
            {"src_buff", {local("s", 1)}},
            {"dst_buff", {remote(0, 1)}}},
           {{"name", "rppkt"}, {"channel_type", "memory"}, {"src_buff", {local("s", 1)}}, {"dst_buff", {remote(0, 1)}}},
           {{"name", "cpkt"}, {"src_buff", {local("i", 1)}}, {"dst_buff", {local("s", 2)}}},
           {{"name", "upkt"}, {"src_buff", {local("s", 0)}}, {"dst_buff", {local("o", 0)}}},
           {{"name", "repkt"},
            {"reduce_op", "sum"},
            {"src_buff", {local("i", 0), local("s", 0)}},
            {"dst_buff", {local("o", 0)}}},
           {{"name", "respkt"},
            {"channel_type", "memory"},
            {"reduce_op", "sum"},
            {"src_buff", {local("i", 0), local("s", 0)}},
            {"dst_buff", {local("o", 0), remote(0, 2)}}},
           {{"name", "recpkt"},
            {"reduce_op", "sum"},
            {"src_buff", {local("i", 0), local("s", 0)}},
            {"dst_buff", {local("o", 0), local("s", 3)}}},
           {{"name", "recspkt"},
            {"channel_type", "memory"},
            {"reduce_op", "sum"},
            {"src_buff", {local("i", 0), local("s", 0)}},
            {"dst_buff", {local("o", 0), local("s", 3), remote(0, 2)}}},
           {{"name", "gstorepkt"},
            {"channel_type", "switch"},
            {"src_buff", {local("s", 0)}},
            {"dst_buff", {multicast(0, 0)}}},
           {{"name", "glre"},
            {"buffer_type", "s"},
            {"buffer_offset", 1},
            {"size", 1},
            {"dst_chunk", {{"rank", r}, {"type", "o"}, {"index", 1}, {"size", 1}}},
            {"channel_ids", {0}},
            {"channel_type", "switch"},
            {"reduce_op", "sum"}},
       })}};
  return {
      {"id", r},
      {"input_chunks", 2},
      {"output_chunks", 2},
      {"scratch_chunks", 4},
      {"channels", json::array({{{"channel_type", "memory"}, {"connected_to", {peer}}},
                                {{"channel_type", "port"}, {"connected_to", {peer}}},
                                {{"channel_type", "switch"},
                                 {"buffer_type", "s"},
                                 {"rank_groups", json::array({{{"size", 2}, {"ranks", {0, 1}}}})}}})},
      {"remote_buffers", json::array({{{"rank", peer}, {"type", "s"}, {"access_channel_types", {"memory", "port"}}}})},
      {"semaphores", json::array()},
      {"threadblocks", json::array({tb0})}};
}

}  // namespace

json simplePlan() {
  return {{"name", "simple"},
          {"collective", "allreduce"},
          {"protocol", "Simple"},
          {"inplace", true},
          {"buffer_alignment", 16},
          {"num_threads_per_block", 512},
          {"gpus", json::array({simpleRank(0), simpleRank(1)})}};
}

json packetPlan() {
  return {
      {"name", "packet"}, {"collective", "allreduce"},         {"protocol", "LL"},
      {"inplace", true},  {"use_double_scratch_buffer", true}, {"gpus", json::array({packetRank(0), packetRank(1)})}};
}

mscclpp::plan::PlanPtr load(const json& j, int onlyRank, const std::string& source) {
  mscclpp::plan::LoadOptions options;
  options.onlyRank = onlyRank;
  return mscclpp::plan::loadPlanJson(j.dump(), source, options);
}

std::string loadError(const json& j, int onlyRank, const std::string& source) {
  try {
    load(j, onlyRank, source);
  } catch (const mscclpp::Error& e) {
    return e.what();
  }
  return "";
}

json minimalPlan(const std::string& name, const std::string& collective, int nRanks, uint32_t inputChunks,
                 uint32_t outputChunks, bool inPlace, const std::string& reduceOp) {
  json gpus = json::array();
  for (int r = 0; r < nRanks; ++r) {
    json peers = json::array();
    if (nRanks > 1) {
      peers.push_back((r + 1) % nRanks);
      peers.push_back((r + nRanks - 1) % nRanks);
    }
    json ops = json::array();
    if (inputChunks > 0) {
      ops.push_back(
          {{"name", "copy"}, {"src_buff", {local("i", 0)}}, {"dst_buff", {local(outputChunks > 0 ? "o" : "i", 0)}}});
      if (!reduceOp.empty()) {
        ops.push_back({{"name", "re"},
                       {"reduce_op", reduceOp},
                       {"src_buff", {local("i", 0), local("i", 0)}},
                       {"dst_buff", {local("i", 0)}}});
      }
    }
    gpus.push_back({{"id", r},
                    {"input_chunks", inputChunks},
                    {"output_chunks", outputChunks},
                    {"scratch_chunks", 0},
                    {"channels",
                     nRanks > 1 ? json::array({{{"channel_type", "memory"}, {"connected_to", peers}}}) : json::array()},
                    {"remote_buffers", json::array()},
                    {"threadblocks", json::array({{{"id", 0}, {"channels", json::array()}, {"ops", ops}}})}});
  }
  return {{"name", name}, {"collective", collective}, {"protocol", "Simple"}, {"inplace", inPlace}, {"gpus", gpus}};
}

std::string referencePlansDir() { return MSCCLPP_TEST_REFERENCE_PLANS; }
std::string planDataDir() { return MSCCLPP_TEST_PLAN_DATA; }

std::vector<std::string> referencePlanFiles() {
  std::vector<std::string> files;
  for (const char* sub : {"mscclpp/committed", "mscclpp/generated"}) {
    const std::string dir = referencePlansDir() + "/" + sub;
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) throw std::runtime_error("cannot open " + dir);
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) files.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

TempDir::TempDir() {
  char pattern[] = "/tmp/mscclpp-plan-test-XXXXXX";
  if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  // Test directories hold files and FIFOs only (one level).
  if (DIR* d = opendir(path_.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      const std::string p = path_ + "/" + n;
      struct stat st;
      if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        rmdir(p.c_str());
      } else {
        unlink(p.c_str());
      }
    }
    closedir(d);
  }
  rmdir(path_.c_str());
}

}  // namespace plantest
