#pragma once
// Builds IDX files byte by byte for the data-layer tests (independently of read_idx).
#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace tandem::test {

/// Big-endian bytes of an unsigned value of `width` bytes.
inline std::string be_bytes(uint64_t v, int width) {
  std::string out(static_cast<size_t>(width), '\0');
  for (int i = width - 1; i >= 0; --i, v >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
  return out;
}

/// An IDX header: 0 0 type ndims, then the sizes.
inline std::string idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::string h{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) h += be_bytes(d, 4);
  return h;
}

/// A uint8 IDX file: header + the values.
inline std::string idx_u8(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values) {
  return idx_header(0x08, dims) + std::string(values.begin(), values.end());
}

/// Writes `bytes` gzip-compressed with zlib.
inline void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("gzopen failed: " + path);
  if (!bytes.empty() && gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) != static_cast<int>(bytes.size()))
    throw std::runtime_error("gzwrite failed: " + path);
  gzclose(f);
}

/// Writes a small MNIST-style split (n images of h x w, labels `labels`) into `dir`,
/// gzip'd; pixel (i, y, x) = (i * 7 + y * w + x) mod 256.
inline void write_mnist_split(const std::string& dir, const std::string& split, uint32_t h, uint32_t w,
                              const std::vector<uint8_t>& labels, bool gz = true) {
  const auto n = static_cast<uint32_t>(labels.size());
  std::vector<uint8_t> pix;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < h * w; ++k) pix.push_back(static_cast<uint8_t>((i * 7 + k) % 256));
  const std::string img = idx_u8({n, h, w}, pix), lab = idx_u8({n}, labels);
  const std::string ip = dir + "/" + split + "-images-idx3-ubyte", lp = dir + "/" + split + "-labels-idx1-ubyte";
  if (gz) {
    write_gz(ip + ".gz", img);
    write_gz(lp + ".gz", lab);
  } else {
    write_bytes(ip, img);
    write_bytes(lp, lab);
  }
}

}  // namespace tandem::test
