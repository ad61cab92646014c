// The goodbye of a process that exits with endpoints alive: one
// atexit handler says it on each, so the peers see a rank that left
// (its process exited) rather than one that died. A forked child
// inherits the list and the handler but not the endpoints' threads:
// only the process that listed them speaks for them.
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <set>

#include "bootstrap/tcp_endpoint.hpp"

namespace mscclpp::bootstrap {

namespace {

struct ExitList {
  std::mutex mutex;
  std::set<TcpEndpoint*> endpoints;
  pid_t owner = 0;
  bool handlerInstalled = false;
};

ExitList& exitList() {
  static ExitList* list = new ExitList();  // never destroyed: the handler runs during exit
  return *list;
}

void sayGoodbyesAtExit() {
  ExitList& list = exitList();
  std::lock_guard<std::mutex> lock(list.mutex);  // an endpoint being destroyed waits, then goes
  if (list.owner != ::getpid()) return;
  for (TcpEndpoint* e : list.endpoints) e->sayGoodbyeAtExit();
  list.endpoints.clear();
}

}  // namespace

void listForExitGoodbye(TcpEndpoint* endpoint) {
  ExitList& list = exitList();
  std::lock_guard<std::mutex> lock(list.mutex);
  if (list.owner != ::getpid()) list.endpoints.clear();  // a forked child's inherited entries
  list.owner = ::getpid();
  list.endpoints.insert(endpoint);
  if (!list.handlerInstalled) list.handlerInstalled = std::atexit(sayGoodbyesAtExit) == 0;
}

void unlistForExitGoodbye(TcpEndpoint* endpoint) {
  ExitList& list = exitList();
  std::lock_guard<std::mutex> lock(list.mutex);
  list.endpoints.erase(endpoint);
}

}  // namespace mscclpp::bootstrap
