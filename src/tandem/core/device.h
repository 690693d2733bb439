#pragma once
// Device: where a tensor's storage lives. Only CPU has kernels today, but storage,
// allocators and tensors carry a Device so that another backend can be added without
// assuming host memory anywhere (DESIGN.md: nothing may assume CPU-only memory).
#include <cstdint>
#include <ostream>
#include <string>

namespace tandem {

enum class DeviceType : uint8_t { CPU };

/// A device type plus an index (-1 = the current/default device of that type).
struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = -1;
  constexpr Device() = default;
  constexpr Device(DeviceType t, int16_t i = -1) : type(t), index(i) {}  // NOLINT
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string str() const { return index < 0 ? "cpu" : "cpu:" + std::to_string(index); }
};
inline constexpr Device kCPU{DeviceType::CPU};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace tandem
