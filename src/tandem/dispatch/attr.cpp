#include "tandem/dispatch/attr.h"

#include <cstring>
#include <functional>

namespace tandem {

std::ostream& operator<<(std::ostream& os, const AttrValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) os << "None";
        else if constexpr (std::is_same_v<T, bool>) os << (x ? "True" : "False");
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) os << IntArrayRef(x);
        else if constexpr (std::is_same_v<T, std::string>) os << '"' << x << '"';
        else if constexpr (std::is_same_v<T, DType>) os << dtype_name(x);
        else os << x;
      },
      v);
  return os;
}

namespace {
inline uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix-style combine: order-sensitive and well distributed.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}
}  // namespace

uint64_t hash_attr(const AttrValue& v) {
  uint64_t h = v.index();
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t>) {
          h = mix(h, static_cast<uint64_t>(x));
        } else if constexpr (std::is_same_v<T, double>) {
          uint64_t b;
          std::memcpy(&b, &x, 8);
          h = mix(h, b);
        } else if constexpr (std::is_same_v<T, Scalar>) {
          double d = x.to_double();
          uint64_t b;
          std::memcpy(&b, &d, 8);
          h = mix(mix(h, static_cast<uint64_t>(x.kind())), b);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t e : x) h = mix(h, static_cast<uint64_t>(e));
          h = mix(h, x.size());
        } else if constexpr (std::is_same_v<T, std::string>) {
          h = mix(h, std::hash<std::string>{}(x));
        } else if constexpr (std::is_same_v<T, DType>) {
          h = mix(h, static_cast<uint64_t>(x));
        }
      },
      v);
  return h;
}

}  // namespace tandem
