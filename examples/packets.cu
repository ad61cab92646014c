// putPackets / getPackets with a flag (seed 003). Run: example_packets [--device cpu|gpu]
// [--iterations N], or as processes with --nranks 2 --rank R --root HOST:PORT.
#include "packets.hpp"

int main(int argc, char** argv) {
  using namespace mscclpp::examples;
  return exampleMain<PacketsResult>(argc, argv, "packets", 2, runPackets<mscclpp::LL16Packet>);
}
