// Bounds-checked little-endian serialisation of what peers exchange:
// registered memory and connection endpoints.
// A reader error names the structure and the field.
#ifndef MSCCLPP_CORE_SERIAL_HPP_
#define MSCCLPP_CORE_SERIAL_HPP_

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/enforce.hpp"

namespace mscclpp {

class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable<T>::value, "plain values only");
    const char* p = reinterpret_cast<const char*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void putBytes(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  void putString(const std::string& s) {
    put<uint16_t>(static_cast<uint16_t>(s.size()));
    putBytes(s.data(), s.size());
  }
  std::vector<char>& bytes() { return bytes_; }

 private:
  std::vector<char> bytes_;
};

class ByteReader {
 public:
  ByteReader(const std::vector<char>& bytes, const char* what) : bytes_(bytes), what_(what) {}

  template <class T>
  T get(const char* field) {
    static_assert(std::is_trivially_copyable<T>::value, "plain values only");
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void getBytes(void* out, size_t n, const char* field) {
    need(n, field);
    std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
  }
  std::string getString(const char* field, size_t maxLength) {
    uint16_t n = get<uint16_t>(field);
    MSCCLPP_ENFORCE(n <= maxLength, ErrorCode::InvalidArgument, "%s: field %s has length %u, more than %zu", what_,
                    field, unsigned(n), maxLength);
    need(n, field);
    std::string s(bytes_.data() + pos_, n);
    pos_ += n;
    return s;
  }
  void expectEnd() const {
    MSCCLPP_ENFORCE(pos_ == bytes_.size(), ErrorCode::InvalidArgument, "%s: %zu trailing bytes after the last field",
                    what_, bytes_.size() - pos_);
  }
  const char* what() const { return what_; }

 private:
  void need(size_t n, const char* field) const {
    MSCCLPP_ENFORCE(bytes_.size() - pos_ >= n, ErrorCode::InvalidArgument,
                    "%s: truncated at field %s (offset %zu needs %zu bytes, %zu left)", what_, field, pos_, n,
                    bytes_.size() - pos_);
  }
  const std::vector<char>& bytes_;
  const char* what_;
  size_t pos_ = 0;
};

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_SERIAL_HPP_
