#include "core/hash.hpp"

namespace mscclpp {

uint64_t mix64(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hashString(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then mixed
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return mix64(h, text.size());
}

}  // namespace mscclpp
