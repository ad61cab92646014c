// The control of test_visibility: a library built WITHOUT hidden visibility that defines and calls
// one of the names interposer.cc defines. Loaded after the interposer, its call goes to the
// interposer: the test's setup does interpose, so our libraries resisting it means something.
#include <cstdint>

namespace mscclpp::params {
int64_t planMaxBytes();
}

extern "C" int64_t victimPlanMaxBytes() { return mscclpp::params::planMaxBytes(); }
