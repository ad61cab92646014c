// Catch2's implementation without its main(): see catch_session.hpp.
#define CATCH_CONFIG_RUNNER
#include "catch_session.hpp"

#include <catch2/catch.hpp>

int mscclpp::test::runCatchSession(int argc, char** argv) { return Catch::Session().run(argc, argv); }
