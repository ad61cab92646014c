// The subcommands of mscclpp-plan that have files of their own;
// main and the other commands are in mscclpp_plan.cc. Each
// reads argv[first..argc) with the tools' parser and returns
// the exit status: 0 success, 1 failure, 2 usage error.
#ifndef MSCCLPP_TOOLS_PLAN_COMMANDS_HPP_
#define MSCCLPP_TOOLS_PLAN_COMMANDS_HPP_

// mscclpp-plan verify [options] PLAN...: the
// plan verifier (docs/plan-verifier.md).
int verifyCommand(int argc, char** argv, int first);

// mscclpp-plan show PLAN -o FILE.svg|FILE.html [options]: the picture of a plan.
int showCommand(int argc, char** argv, int first);

#endif  // MSCCLPP_TOOLS_PLAN_COMMANDS_HPP_
