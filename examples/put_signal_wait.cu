// put 1 KB, signal, wait (seed 003). Run: example_put_signal_wait [--device cpu|gpu] (ranks as
// threads), or as two processes: example_put_signal_wait --nranks 2 --rank R --root HOST:PORT.
// Built by nvcc in GPU builds and, as the same text, by the host compiler otherwise.
#include "put_signal_wait.hpp"

int main(int argc, char** argv) {
  using namespace mscclpp::examples;
  return exampleMain<PutSignalWaitResult>(argc, argv, "put_signal_wait", 2, runPutSignalWait);
}
