#include "transport/ib_verbs/hca_list.hpp"

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"

namespace mscclpp::transport::ib_verbs {

HcaFilter parseHcaFilter(const std::string& text) {
  HcaFilter f;
  size_t pos = 0;
  if (pos < text.size() && text[pos] == '^') f.exclude = true, ++pos;
  if (pos < text.size() && text[pos] == '=') f.exact = true, ++pos;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() : comma + 1;
    HcaFilter::Entry e;
    size_t colon = item.find(':');
    e.name = item.substr(0, colon);
    if (colon != std::string::npos) {
      const std::string p = item.substr(colon + 1);
      char* end = nullptr;
      long v = std::strtol(p.c_str(), &end, 10);
      MSCCLPP_ENFORCE(!p.empty() && *end == '\0' && v >= 1 && v <= 255, ErrorCode::InvalidArgument,
                      "MSCCLPP_HCA_DEVICES='%s': '%s' has no port number after ':' (expected name:port, port >= 1)",
                      text.c_str(), item.c_str());
      e.port = static_cast<int>(v);
    }
    MSCCLPP_ENFORCE(!e.name.empty(), ErrorCode::InvalidArgument,
                    "MSCCLPP_HCA_DEVICES='%s': an empty device name (expected [^][=]name[:port],...)", text.c_str());
    f.entries.push_back(e);
  }
  return f;
}

namespace {
bool matches(const HcaFilter& f, const HcaFilter::Entry& e, const HcaPort& p) {
  const bool name = f.exact ? p.device == e.name : p.device.compare(0, e.name.size(), e.name) == 0;
  return name && (e.port < 0 || e.port == p.port);
}
}  // namespace

std::vector<HcaPort> selectPorts(const std::vector<HcaPort>& active, const HcaFilter& filter) {
  std::vector<HcaPort> out;
  if (filter.entries.empty()) return active;
  if (filter.exclude) {
    for (const HcaPort& p : active) {
      bool excluded = false;
      for (const HcaFilter::Entry& e : filter.entries) excluded = excluded || matches(filter, e, p);
      if (!excluded) out.push_back(p);
    }
    return out;
  }
  for (const HcaFilter::Entry& e : filter.entries) {
    for (const HcaPort& p : active) {
      bool taken = false;
      for (const HcaPort& q : out) taken = taken || (q.device == p.device && q.port == p.port);
      if (!taken && matches(filter, e, p)) out.push_back(p);
    }
  }
  return out;
}

std::vector<HcaPort> activePorts(VerbsLibrary& lib, std::string* why) {
  std::vector<HcaPort> out;
  int n = 0;
  ibv_device** list = lib.getDeviceList(&n);
  if (list == nullptr || n <= 0) {
    const int e = errno;
    *why = list ? std::string("ibv_get_device_list returned 0 devices")
                : std::string("ibv_get_device_list failed: ") + std::strerror(e);
    if (list) lib.freeDeviceList(list);
    return out;
  }
  std::string inactive;
  for (int i = 0; i < n; ++i) {
    const std::string name = lib.getDeviceName(list[i]);
    ibv_context* ctx = lib.openDevice(list[i]);
    if (ctx == nullptr) {
      inactive += (inactive.empty() ? "" : ", ") + name + " (ibv_open_device: " + std::strerror(errno) + ")";
      continue;
    }
    ibv_device_attr attr{};
    if (lib.queryDevice(ctx, &attr) == 0) {
      for (int p = 1; p <= attr.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (lib.queryPort(ctx, static_cast<uint8_t>(p), &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
          out.push_back(HcaPort{name, p, list[i]->ibdev_path, pa.link_layer});
        } else {
          inactive += (inactive.empty() ? "" : ", ") + name + ":" + std::to_string(p) + " (not active)";
        }
      }
    }
    lib.closeDevice(ctx);
  }
  lib.freeDeviceList(list);
  if (out.empty()) *why = strFormat("%d device(s) but no active port: %s", n, inactive.c_str());
  return out;
}

const HcaList& hcaList() {
  static std::mutex mutex;
  static std::map<std::string, HcaList> lists;  // by library and filter
  const std::string library = params::ibverbsLibrary(), text = params::hcaDevices();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = lists.find(library + '\n' + text);
  if (it != lists.end()) return it->second;
  HcaFilter filter = parseHcaFilter(text);
  HcaList l;
  l.lib = loadVerbsLibrary(library);
  std::vector<HcaPort> active = activePorts(*l.lib, &l.why);
  l.ports = selectPorts(active, filter);
  if (l.ports.empty() && !active.empty()) {
    std::string names;
    for (const HcaPort& p : active) names += (names.empty() ? "" : ", ") + p.name();
    l.why = strFormat("MSCCLPP_HCA_DEVICES='%s' selects none of the active ports %s", text.c_str(), names.c_str());
  }
  std::string names;
  for (size_t i = 0; i < l.ports.size(); ++i)
    names += strFormat("%sIB%zu=%s", i ? ", " : "", i, l.ports[i].name().c_str());
  if (!l.ports.empty()) MSCCLPP_INFO(LogTransport, "InfiniBand: %s (%s)", names.c_str(), l.lib->name.c_str());
  return lists.emplace(library + '\n' + text, std::move(l)).first->second;
}

}  // namespace mscclpp::transport::ib_verbs
