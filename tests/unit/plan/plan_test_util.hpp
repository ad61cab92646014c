// Shared helpers of the plan-layer tests: two small valid plans to mutate (one
// per protocol), loading helpers that return the error text, test data paths,
// and a temporary directory.
#ifndef MSCCLPP_TESTS_UNIT_PLAN_PLAN_TEST_UTIL_HPP_
#define MSCCLPP_TESTS_UNIT_PLAN_PLAN_TEST_UTIL_HPP_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "plan/plan_loader.hpp"

namespace plantest {

using nlohmann::json;

// 2 ranks, protocol Simple, allreduce in-place, 4 input/output/scratch chunks per rank. Each rank:
// channels memory [peer], port [peer], switch over input [0,1]; remote buffers {peer scratch via
// memory+port, peer input via memory}; semaphores [0, 1];
//   threadblocks[0] (channels memory [0], port [0]; remote refs memory [0,1], port [0]):
//     0 nop, 1 copy i0->s0, 2 put(memory) i1->R0[1], 3 signal(memory) [0], 4 wait(memory) [0],
//     5 re [i0,s0]->[i0], 6 pws(port) i2->R0[2] ids [0], 7 flush(port) [0], 8 barrier 0 of 2,
//     9 sem_release [0], 10 rre(memory) [i3,R1[3]]->[o3]
//   threadblocks[1] (channels switch [0]):
//     0 barrier 0 of 2, 1 sem_acquire [0], 2 glres M0[0]->M0[0],
//     3 pipeline {unit_size 1024, num_chunks 1} [copy i1->o1 (tbg 0 of 1), gstore i2->M0[2]]
json simplePlan();

// 2 ranks, protocol LL, allreduce in-place, 2 input/output chunks, 4 scratch chunks per rank. Each rank:
// channels memory [peer], port [peer], switch over scratch [0,1]; remote buffer {peer scratch via
// memory+port}; threadblocks[0] (channels memory [0], port [0], switch [0]; remote refs memory [0],
// port [0]):
//   0 ppkt(memory) i0->R0[0], 1 ppkt(port) s1->R0[1] ids [0], 2 rppkt(memory) s1->R0[1], 3 cpkt i1->s2,
//   4 upkt s0->o0, 5 repkt [i0,s0]->[o0], 6 respkt(memory) [i0,s0]->[o0,R0[2]], 7 recpkt [i0,s0]->[o0,s3],
//   8 recspkt(memory) [i0,s0]->[o0,s3,R0[2]], 9 gstorepkt s0->M0[0],
//   10 glre (unfused: buffer_type s, buffer_offset 1, size 1, dst_chunk o1, channel_ids [0])
json packetPlan();

// Loads j (dumped to text) and returns the error message, or "" when it loads.
std::string loadError(const json& j, int onlyRank = -1, const std::string& source = "t.json");
mscclpp::plan::PlanPtr load(const json& j, int onlyRank = -1, const std::string& source = "t.json");

// A minimal valid plan for registry tests: nRanks ranks in a ring of memory
// channels, one threadblock per rank with a copy (and a "re" with reduce_op
// when reduceOp is not empty).
json minimalPlan(const std::string& name, const std::string& collective, int nRanks, uint32_t inputChunks,
                 uint32_t outputChunks, bool inPlace, const std::string& reduceOp = "");

std::string referencePlansDir();                // tests/data/reference-plans
std::string planDataDir();                      // tests/data/plans
std::vector<std::string> referencePlanFiles();  // every .json under referencePlansDir(), sorted

void writeFile(const std::string& path, const std::string& text);

// A fresh directory under /tmp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace plantest

#endif  // MSCCLPP_TESTS_UNIT_PLAN_PLAN_TEST_UTIL_HPP_
