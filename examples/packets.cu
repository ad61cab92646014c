// putPackets and getPackets with a flag: docs/cpp-api.md.
// Run: example_packets [--device cpu|gpu] [--iterations N]
// As two processes: add --nranks 2 --rank R --root HOST:PORT.
#include "packets.hpp"

int main(int argc, char** argv) {
  using namespace mscclpp::examples;
  return exampleMain<PacketsResult>(argc, argv, "packets", 2, runPackets<mscclpp::LL16Packet>);
}
