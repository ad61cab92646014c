// Bootstrap semantics, run over both implementations (TCP sockets and
// in-process mailboxes) with ranks as threads.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <numeric>

#include "../../support/scoped_env.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/errors.hpp"
#include "rank_threads.hpp"

using namespace mscclpp;
using mscclpp::test::runRanks;

namespace {

std::vector<std::shared_ptr<Bootstrap>> make(const std::string& kind, int n) {
  return kind == "tcp" ? test::makeTcpBootstraps(n) : test::makeInProcessBootstraps(n);
}

}  // namespace

TEST_CASE("tagged messages keep order per tag and never mix tags", "[bootstrap]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      auto bs = make(kind, 3);
      runRanks(3, [&](int r) {
        Bootstrap& b = *bs[r];
        CHECK(b.getRank() == r);
        CHECK(b.getNranks() == 3);
        int next = (r + 1) % 3, prev = (r + 2) % 3;
        for (int i = 0; i < 5; ++i) {
          int v = 100 * r + i;
          b.send(&v, sizeof(v), next, 7);
          int w = -v;
          b.send(&w, sizeof(w), next, 8);
        }
        // Tag 8 first: tag 7 messages wait in their own queue.
        for (int i = 0; i < 5; ++i) {
          int w = 0;
          b.recv(&w, sizeof(w), prev, 8);
          CHECK(w == -(100 * prev + i));
        }
        for (int i = 0; i < 5; ++i) {
          std::vector<char> m = b.recv(prev, 7, 64);
          REQUIRE(m.size() == sizeof(int));
          int v;
          std::memcpy(&v, m.data(), sizeof(v));
          CHECK(v == 100 * prev + i);
        }
        // A message to oneself.
        std::string self = "self";
        b.send(self.data(), self.size(), r, 1);
        std::vector<char> got = b.recv(r, 1, 16);
        CHECK(std::string(got.begin(), got.end()) == "self");
        b.barrier();
      });
    }
  }
}

TEST_CASE("allGather, broadcast and barrier agree on every rank", "[bootstrap]") {
  for (std::string kind : {"tcp", "inproc"}) {
    for (int n : {1, 2, 5, 8}) {
      DYNAMIC_SECTION(kind << " n=" << n) {
        auto bs = make(kind, n);
        runRanks(n, [&](int r) {
          Bootstrap& b = *bs[r];
          std::vector<uint64_t> all(static_cast<size_t>(n) * 3, 0);
          for (int k = 0; k < 3; ++k) all[r * 3 + k] = 1000 * r + k;
          b.allGather(all.data(), 3 * sizeof(uint64_t));
          for (int q = 0; q < n; ++q)
            for (int k = 0; k < 3; ++k) CHECK(all[q * 3 + k] == uint64_t(1000 * q + k));
          for (int root = 0; root < n; ++root) {
            std::vector<int> data(10, r == root ? root + 1 : -1);
            b.broadcast(data.data(), data.size() * sizeof(int), root);
            CHECK(data == std::vector<int>(10, root + 1));
          }
          b.barrier();
          b.barrier();
        });
      }
    }
  }
}

TEST_CASE("large messages cross intact", "[bootstrap]") {
  auto bs = make("tcp", 2);
  const size_t n = 8 << 20;
  runRanks(2, [&](int r) {
    if (r == 0) {
      std::vector<char> big(n);
      for (size_t i = 0; i < n; ++i) big[i] = static_cast<char>(i * 131 + 7);
      bs[0]->send(big, 1, 3);
    } else {
      std::vector<char> got = bs[1]->recv(0, 3, n);
      REQUIRE(got.size() == n);
      bool same = true;
      for (size_t i = 0; i < n; ++i) same = same && got[i] == static_cast<char>(i * 131 + 7);
      CHECK(same);
    }
  });
}

TEST_CASE("receives are bounded in size and checked exactly", "[bootstrap]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      auto bs = make(kind, 2);
      runRanks(2, [&](int r) {
        if (r == 0) {
          char data[100] = {0};
          bs[0]->send(data, 100, 1, 5);
          bs[0]->send(data, 10, 1, 6);
        } else {
          CHECK_THROWS_WITH(bs[1]->recv(0, 5, 64),
                            "bootstrap rank 1/2: recv from rank 0 (tag 5): the message has 100 bytes, more than the 64 "
                            "expected");
          char small[20];
          CHECK_THROWS_WITH(
              bs[1]->recv(small, 20, 0, 6),
              "bootstrap rank 1/2: recv from rank 0 (tag 6): the message has 10 bytes, expected exactly 20");
          CHECK_THROWS_WITH(bs[1]->recv(5, 1, 8), "bootstrap rank 1/2: recv: no rank 5");
        }
      });
    }
  }
}

TEST_CASE("split groups by color, orders by key, isolates messages", "[bootstrap]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      const int n = 6;
      auto bs = make(kind, n);
      runRanks(n, [&](int r) {
        // Colors: even ranks 0, odd ranks 1, rank 5 opts out. Keys reverse the order.
        int color = r == 5 ? -1 : r % 2;
        auto sub = bs[r]->split(color, n - r);
        if (r == 5) {
          CHECK(sub == nullptr);
          bs[r]->barrier();
          return;
        }
        REQUIRE(sub != nullptr);
        std::vector<int> expected = color == 0 ? std::vector<int>{4, 2, 0} : std::vector<int>{3, 1};
        CHECK(sub->getNranks() == static_cast<int>(expected.size()));
        CHECK(expected[sub->getRank()] == r);
        std::vector<int> all(expected.size());
        all[sub->getRank()] = r;
        sub->allGather(all.data(), sizeof(int));
        CHECK(all == expected);
        // A message with the same tag on the parent and on the split does not mix.
        int peer = (sub->getRank() + 1) % sub->getNranks();
        int fromSub = 1000 + r;
        sub->send(&fromSub, sizeof(int), peer, 1);
        int got = 0;
        sub->recv(&got, sizeof(int), (sub->getRank() + sub->getNranks() - 1) % sub->getNranks(), 1);
        CHECK(got >= 1000);
        // Nested split: everyone in its own group of one.
        auto single = sub->split(sub->getRank(), 0);
        CHECK(single->getNranks() == 1);
        single->barrier();
        bs[r]->barrier();
      });
    }
  }
}

TEST_CASE("named views do not see each other's messages", "[bootstrap]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      auto bs = make(kind, 2);
      runRanks(2, [&](int r) {
        auto a = bs[r]->withNamespace("executor");
        auto b = bs[r]->withNamespace("comm");
        if (r == 0) {
          int x = 1, y = 2, z = 3;
          a->send(&x, 4, 1, 0);
          b->send(&y, 4, 1, 0);
          bs[0]->send(&z, 4, 1, 0);
        } else {
          int v = 0;
          bs[1]->recv(&v, 4, 0, 0);
          CHECK(v == 3);
          b->recv(&v, 4, 0, 0);
          CHECK(v == 2);
          a->recv(&v, 4, 0, 0);
          CHECK(v == 1);
        }
        a->barrier();
      });
    }
  }
}

TEST_CASE("MSCCLPP_COMM_ID fixes the root address; rank 0 runs it", "[bootstrap]") {
  // A free port: bind port 0 on loopback, read it, close it.
  int port;
  {
    net::SocketAddress any = net::SocketAddress::parse("127.0.0.1:1");
    any.setPort(0);
    auto s = net::Socket::listenOn(any);
    port = s.localAddress().port();
  }
  std::string commId = "127.0.0.1:" + std::to_string(port);
  test::ScopedEnv env("MSCCLPP_COMM_ID", commId.c_str());
  const int n = 3;
  std::vector<std::shared_ptr<Bootstrap>> bs(n);
  runRanks(n, [&](int r) {
    // Each rank computes the id itself: they agree because it is derived from the address.
    UniqueId id = TcpBootstrap::createUniqueId();
    auto b = std::make_shared<TcpBootstrap>(r, n);
    b->initialize(id);
    std::vector<int> all(n);
    all[r] = r * r;
    b->allGather(all.data(), sizeof(int));
    CHECK(all == std::vector<int>{0, 1, 4});
    bs[r] = b;
  });
}
