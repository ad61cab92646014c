// One TcpBootstrap rank in a process of its own, for the liveness tests:
// they kill it, stop it or let it leave, which a thread cannot do.
// Usage: liveness_peer <unique id as 256 hex digits> <rank> <nRanks>.
// Prints "READY" once initialized, then reads commands from stdin:
//   crash        end at once, no exit handler runs: a crash to the peers
//   exit         exit(0) with the bootstrap alive: its exit handler says goodbye
//   destroy      destroy the bootstrap, which says goodbye, then exit 0
//   echo T PEER  receive an int with tag T from PEER and send it back
// EOF on stdin acts like "destroy".
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "mscclpp/bootstrap.hpp"

int main(int argc, char** argv) {
  if (argc != 4 || std::string(argv[1]).size() != 2 * MSCCLPP_UNIQUE_ID_BYTES) {
    std::fprintf(stderr, "usage: liveness_peer <id hex> <rank> <nRanks>\n");
    return 2;
  }
  mscclpp::UniqueId id;
  const std::string hex = argv[1];
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  auto bootstrap = std::make_shared<mscclpp::TcpBootstrap>(std::atoi(argv[2]), std::atoi(argv[3]));
  try {
    bootstrap->initialize(id);
  } catch (const std::exception& e) {
    std::printf("ERROR %s\n", e.what());
    return 1;
  }
  std::printf("READY\n");
  std::fflush(stdout);
  std::string command;
  while (std::getline(std::cin, command)) {
    if (command == "crash") std::_Exit(3);  // no destructor runs: the kernel closes the sockets
    if (command == "exit") std::exit(0);
    if (command == "destroy") break;
    int tag = 0, peer = 0, value = 0;
    if (std::sscanf(command.c_str(), "echo %d %d", &tag, &peer) == 2) {
      bootstrap->recv(&value, sizeof(value), peer, tag);
      bootstrap->send(&value, sizeof(value), peer, tag);
    }
  }
  bootstrap.reset();
  return 0;
}
