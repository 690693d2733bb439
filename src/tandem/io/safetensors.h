#pragma once
// Reading and writing the safetensors format (the Hugging Face tensor file format).
//
// Layout of a file:
//   bytes [0, 8)        N, the header length, a little-endian uint64
//   bytes [8, 8 + N)    a UTF-8 JSON object, padded at the end with spaces:
//                         {"__metadata__": {"key": "value", ...},          (optional)
//                          "name": {"dtype": "F32", "shape": [2, 3],
//                                   "data_offsets": [begin, end]}, ...}
//   bytes [8 + N, EOF)  the data buffer: each tensor's elements, row-major, little-endian,
//                       at [begin, end) relative to the start of the buffer
// dtype names: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL (tandem's ten dtypes).
//
// Writers pad the header with spaces so the buffer starts at a multiple of 8, as the
// reference implementation does; readers accept any header length. The reference
// implementation's rules for readers, which load_safetensors enforces: the header is at
// most 100,000,000 bytes and fits in the file; every tensor's byte range matches its
// dtype and shape; the ranges, sorted, tile the buffer exactly (no gap, no overlap, no
// trailing bytes).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem::io {

/// Tensors with their names, in a meaningful order (a module's state_dict order).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
/// The free-form string -> string "__metadata__" table of a safetensors file.
using Metadata = std::map<std::string, std::string>;

/// What load_safetensors returns: the tensors in file order (ascending data offset,
/// which is the order save_safetensors was given) and the metadata (empty if none).
struct SafetensorsContents {
  NamedTensors tensors;
  Metadata metadata;
  /// The tensor called `name`, or nullopt.
  std::optional<Tensor> find(const std::string& name) const;
};

/// Largest header load_safetensors accepts (the reference implementation's limit).
inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

/// The safetensors spelling of a dtype ("F32", "BF16", "BOOL", ...).
const char* safetensors_dtype_name(DType dtype);
/// Parses a safetensors dtype name; nullopt for names tandem has no dtype for
/// (including valid safetensors ones such as "U32" or "F8_E4M3").
std::optional<DType> dtype_from_safetensors_name(const std::string& name);

/// Writes `tensors` and `metadata` to `path` in the safetensors format, atomically: the
/// bytes go to a temporary file in the same directory, which is flushed, fsync'd and
/// renamed over `path`, so `path` holds either its old contents or the complete new file.
/// On any failure the temporary file is removed and `path` is untouched.
///
/// Tensors are written in the given order, contiguous (a non-contiguous or offset view
/// is written as its logical elements), with their own dtype and shape; 0-d and empty
/// tensors are fine. Bool is stored as bytes 0/1.
///
/// Raises ValueError for an undefined tensor, a duplicate or empty name, or the reserved
/// name "__metadata__"; RuntimeError (naming the file and the system error) when
/// creating, writing, syncing or renaming fails.
void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});

/// Reads a safetensors file written by tandem or any conforming writer. Every tensor is
/// a fresh contiguous CPU tensor owning its memory (the file is not kept open or mapped).
///
/// Raises RuntimeError naming the file and the problem for: a file that cannot be opened
/// or read; one shorter than 8 bytes; a header length over kSafetensorsMaxHeader or past
/// the end of the file; a header that is not a JSON object (or not valid JSON, reported
/// with the byte position); duplicate names; an entry without a string "dtype", an
/// array "shape" of non-negative integers or a two-element "data_offsets" of
/// non-negative integers; an unknown or unsupported dtype; a shape whose byte size
/// overflows or differs from end - begin; begin > end; ranges that overlap, leave a gap
/// or do not end exactly at the end of the file; "__metadata__" that is not an object of
/// strings; a BOOL byte other than 0 or 1. Never reads past the end of the file.
SafetensorsContents load_safetensors(const std::string& path);

}  // namespace tandem::io
