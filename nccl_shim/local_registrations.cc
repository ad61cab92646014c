#include "local_registrations.hpp"

namespace mscclpp::shim {

LocalRegistration* LocalRegistrations::add(void* buff, size_t size, bool window, int winFlags) {
  auto r = std::make_unique<LocalRegistration>();
  r->buff = buff;
  r->size = size;
  r->window = window;
  r->winFlags = winFlags;
  records_.push_back(std::move(r));
  return records_.back().get();
}

bool LocalRegistrations::remove(const void* handle, bool window) {
  for (size_t i = 0; i < records_.size(); ++i) {
    if (records_[i].get() == handle && records_[i]->window == window) {
      records_.erase(records_.begin() + static_cast<long>(i));
      return true;
    }
  }
  return false;
}

bool LocalRegistrations::contains(const void* handle) const {
  for (const auto& r : records_) {
    if (r.get() == handle) return true;
  }
  return false;
}

}  // namespace mscclpp::shim
