// Reads plan files with checks that keep bad input from hurting the process.
// Only regular files, at most MSCCLPP_PLAN_MAX_BYTES, checked with fstat before reading.
// A FIFO never blocks; missing, unreadable and directory paths get precise errors.
#ifndef MSCCLPP_PLAN_PLAN_FILE_HPP_
#define MSCCLPP_PLAN_PLAN_FILE_HPP_

#include <cstdint>
#include <string>

namespace mscclpp::plan {

// The size limit of one plan file;
// a bad MSCCLPP_PLAN_MAX_BYTES throws InvalidArgument.
uint64_t planMaxBytes();
// The limit of the plan directories' files all together;
// a bad MSCCLPP_PLAN_DIR_MAX_BYTES throws InvalidArgument.
uint64_t planDirMaxBytes();

// The whole file.
// InvalidPlan when it is not a regular file or is too large;
// SystemError with errno when it cannot be opened or read.
std::string readPlanFile(const std::string& path);

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_FILE_HPP_
