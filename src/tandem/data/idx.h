#pragma once
// Reader for the IDX format of MNIST, Fashion-MNIST and friends (LeCun et al.).
//
// Layout (all integers big-endian):
//   offset 0   two zero bytes
//   offset 2   element type code: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
//              0x0D float32, 0x0E float64
//   offset 3   number of dimensions, d
//   offset 4   d uint32 sizes
//   offset 4+4d  the elements, row-major, big-endian, exactly prod(sizes) of them
// Files are usually gzip'd ("train-images-idx3-ubyte.gz"); read_idx reads both.
#include <string>

#include "tandem/core/tensor.h"

namespace tandem::data {

/// Most dimensions read_idx accepts (MNIST-style files use 1 for labels, 3 for images).
inline constexpr int kIdxMaxDims = 4;
/// Most data bytes read_idx accepts (4 GiB; the MNIST training images are 47 MB).
inline constexpr uint64_t kIdxMaxBytes = uint64_t{1} << 32;

/// Reads the IDX file at `path`, gzip'd or plain (detected from the content, not the
/// name), into a new contiguous CPU tensor with the file's sizes and the dtype of its
/// type code (uint8, int8, int16, int32, float32, float64), converted to host byte order.
///
/// Every header field is checked and the data must be exactly prod(sizes) elements. Before
/// reading any data, a header that claims more than kIdxMaxBytes, or more than the file
/// could hold (its size for a plain file; 1032 times its size, deflate's best ratio, for a
/// gzip file), is refused. The file is read incrementally, so a header that claims more
/// than the stream holds costs at most about twice the real data in memory.
///
/// Raises RuntimeError "[read_idx] <path>: offset <n>: <problem>", with n the byte offset
/// in the decompressed stream, for: a file that cannot be opened; a truncated header;
/// magic bytes other than 0x00 0x00; an unknown type code; 0 or more than kIdxMaxDims
/// dimensions; a zero dimension; sizes whose byte count overflows or exceeds the bounds
/// above; truncated data; trailing bytes after the data; a corrupt or truncated gzip
/// stream (a failed CRC-32 or length check is named as such). (Bytes after the
/// end of a gzip stream that are not another gzip member are ignored, as zlib does.)
Tensor read_idx(const std::string& path);

}  // namespace tandem::data
