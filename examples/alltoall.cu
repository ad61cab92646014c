// A custom all-to-all over port channels with a DeviceSyncer.
// Run: example_alltoall [--nranks N] [--device cpu|gpu] [--transport shm|tcp|ipc|ibN]
// As processes: add --nranks N --rank R --root HOST:PORT.
#include "alltoall.hpp"

int main(int argc, char** argv) {
  using namespace mscclpp::examples;
  return exampleMain<AlltoallResult>(argc, argv, "alltoall", 4, runAlltoall);
}
