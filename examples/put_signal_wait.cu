// Put 1 KB, signal, wait: docs/cpp-api.md.
// Ranks as threads: example_put_signal_wait [--device cpu|gpu]
// As two processes: add --nranks 2 --rank R --root HOST:PORT.
// nvcc builds it in GPU builds, the host compiler otherwise.
#include "put_signal_wait.hpp"

int main(int argc, char** argv) {
  using namespace mscclpp::examples;
  return exampleMain<PutSignalWaitResult>(argc, argv, "put_signal_wait", 2, runPutSignalWait);
}
