#include "real_root.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "core/logger.hpp"
#include "real_nccl.hpp"

namespace mscclpp::shim {

namespace {

// The sockets open in this process, fd by inode: a socket made by the
// call is one whose inode is new, whatever number it took (other threads
// close and open descriptors meanwhile). The inode comes from the link's
// name, "socket:[N]": reading the link touches no other thread's descriptor.
std::map<ino_t, int> openSockets() {
  std::map<ino_t, int> sockets;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char link[64];
      const std::string path = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t n = ::readlink(path.c_str(), link, sizeof(link) - 1);
      if (n <= 0) continue;
      link[n] = '\0';
      unsigned long long inode = 0;
      if (std::sscanf(link, "socket:[%llu]", &inode) == 1) sockets[static_cast<ino_t>(inode)] = std::atoi(e->d_name);
    }
    ::closedir(d);
  }
  return sockets;
}

// The TCP port fd listens on; 0 when it is no listening socket.
int listeningPort(int fd, ino_t* inode) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  int listening = 0;
  socklen_t len = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) return 0;
  sockaddr_storage a{};
  len = sizeof(a);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  if (a.ss_family != AF_INET && a.ss_family != AF_INET6) return 0;
  *inode = st.st_ino;
  // sin_port and sin6_port sit at the same offset.
  return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
}

// NCCL 2.x's id starts with a 64-bit magic, then the root's
// socket address: family, then the port in network order.
int idPort(const ncclUniqueId& id) {
  const auto* b = reinterpret_cast<const unsigned char*>(id.internal);
  return (b[10] << 8) | b[11];
}

}  // namespace

ncclResult_t realGetUniqueId(ncclUniqueId* id, RealRoot* root) {
  *root = RealRoot{};
  const std::map<ino_t, int> before = openSockets();
  const ncclResult_t rc = callReal<NcclFn::ncclGetUniqueId>(id);
  if (rc != ncclSuccess) return rc;
  const int port = idPort(*id);
  for (const auto& [inode, fd] : openSockets()) {
    ino_t listening = 0;
    if (before.count(inode) == 0 && port != 0 && listeningPort(fd, &listening) == port && listening == inode) {
      root->fd = fd;
      root->inode = inode;
      break;
    }
  }
  return rc;
}

void releaseRealRoot(RealRoot* root) {
  if (root->fd < 0) return;
  ino_t inode = 0;
  if (listeningPort(root->fd, &inode) != 0 && inode == root->inode) {
    ::shutdown(root->fd, SHUT_RDWR);
    MSCCLPP_INFO(LogShim, "ended the real NCCL's bootstrap root (socket %d): no communicator will use its id",
                 root->fd);
  }
  *root = RealRoot{};
}

}  // namespace mscclpp::shim
