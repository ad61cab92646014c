// Reading plan files from disk with the checks that keep bad input from hurting the process: only
// regular files, never more than MSCCLPP_PLAN_MAX_BYTES (checked with fstat BEFORE reading), no
// blocking on FIFOs, precise errors for missing, unreadable and directory paths.
#ifndef MSCCLPP_PLAN_PLAN_FILE_HPP_
#define MSCCLPP_PLAN_PLAN_FILE_HPP_

#include <cstdint>
#include <string>

namespace mscclpp::plan {

// The size limit for one plan file (MSCCLPP_PLAN_MAX_BYTES); throws InvalidArgument for a bad value.
uint64_t planMaxBytes();

// The whole file. Throws Error(InvalidPlan) for a path that is not a regular file or is too large,
// SystemError (with errno) when it cannot be opened or read.
std::string readPlanFile(const std::string& path);

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_FILE_HPP_
