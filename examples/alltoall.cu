// The seed's custom all-to-all over port channels with a DeviceSyncer (seed 003).
// Run: example_alltoall [--nranks N] [--device cpu|gpu] [--transport shm|tcp|ipc|ibN], or as
// processes with --nranks N --rank R --root HOST:PORT.
#include "alltoall.hpp"

int main(int argc, char** argv) {
  using namespace mscclpp::examples;
  return exampleMain<AlltoallResult>(argc, argv, "alltoall", 4, runAlltoall);
}
