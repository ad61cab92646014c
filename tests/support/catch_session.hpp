// Runs Catch2 for test programs that have a main() of their own (a skip without a device, a child
// process mode). Catch2's implementation is compiled once, in catch_session.cc, instead of in
// every such program: it is the slowest translation unit of a test build.
#ifndef MSCCLPP_TESTS_SUPPORT_CATCH_SESSION_HPP_
#define MSCCLPP_TESTS_SUPPORT_CATCH_SESSION_HPP_

namespace mscclpp::test {
// Catch::Session().run(argc, argv).
int runCatchSession(int argc, char** argv);
}  // namespace mscclpp::test

#endif  // MSCCLPP_TESTS_SUPPORT_CATCH_SESSION_HPP_
