// putWithSignal, then computation while the proxy moves the data.
// Run: example_overlap [--device cpu|gpu] [--transport shm|tcp|ipc|ibN]
// As two processes: add --nranks 2 --rank R --root HOST:PORT.
#include "overlap.hpp"

int main(int argc, char** argv) {
  using namespace mscclpp::examples;
  return exampleMain<OverlapResult>(argc, argv, "overlap", 2, runOverlap);
}
