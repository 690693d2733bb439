// IDX reader (format in idx.h). zlib's gz* functions read gzip'd and plain files alike.
#include "tandem/data/idx.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <limits>
#include <cstdlib>
#include <cstring>

#include "tandem/ops/creation.h"

namespace tandem::data {

namespace {

// First allocation for the data; larger files grow the buffer geometrically as the
// stream proves it holds the bytes.
constexpr uint64_t kInitialChunk = uint64_t{64} << 20;
// The most bytes deflate can expand one compressed byte into (258-byte matches coded in
// 2 bits: zlib's documented limit is 1032:1).
constexpr uint64_t kGzipMaxRatio = 1032;

std::string hex_byte(uint8_t b) {
  const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

std::string sizes_str(const DimVector& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// A gzip'd or plain input stream that tracks the decompressed offset and turns every
// failure into a RuntimeError naming the file and that offset.
class IdxStream {
 public:
  explicit IdxStream(const std::string& path) : path_(path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail_at_open(std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail_at_open("is a directory, expected a file");
    file_size_ = static_cast<uint64_t>(st.st_size);
    f_ = gzopen(path.c_str(), "rb");
    if (!f_) fail_at_open(errno ? std::strerror(errno) : "out of memory");
    gzbuffer(f_, 1 << 18);
  }
  ~IdxStream() {
    if (f_) gzclose(f_);
  }
  IdxStream(const IdxStream&) = delete;
  IdxStream& operator=(const IdxStream&) = delete;

  uint64_t offset() const { return pos_; }
  /// The size of the file on disk (compressed, for a gzip file).
  uint64_t file_size() const { return file_size_; }
  /// True when the file is gzip'd (valid after the first read).
  bool compressed() const { return gzdirect(f_) == 0; }

  /// Reads up to n bytes; fewer only at the end of the stream.
  uint64_t read(void* dst, uint64_t n) {
    auto* p = static_cast<char*>(dst);
    uint64_t done = 0;
    while (done < n) {
      unsigned chunk = static_cast<unsigned>(std::min<uint64_t>(n - done, 1u << 30));
      int r = gzread(f_, p + done, chunk);
      if (r < 0) fail_stream();
      if (r == 0) {
        check_clean_eof();
        break;
      }
      done += static_cast<uint64_t>(r);
      pos_ += static_cast<uint64_t>(r);
    }
    return done;
  }

  [[noreturn]] void fail(uint64_t offset, const std::string& what) const {
    throw RuntimeError(str_cat("[read_idx] ", path_, ": offset ", offset, ": ", what));
  }

 private:
  [[noreturn]] void fail_at_open(const std::string& why) const {
    throw RuntimeError(str_cat("[read_idx] ", path_, ": cannot open: ", why));
  }
  [[noreturn]] void fail_stream() const {
    int err = Z_OK;
    const char* msg = gzerror(f_, &err);
    if (err == Z_ERRNO) fail(pos_, str_cat("cannot read the file: ", std::strerror(errno)));
    fail(pos_, damage_text(msg));
  }
  void check_clean_eof() const {
    int err = Z_OK;
    const char* msg = gzerror(f_, &err);
    if (err != Z_OK && err != Z_STREAM_END) fail(pos_, damage_text(msg));
  }
  // What zlib's message says is damaged, in words (zlib reports the checks of the gzip
  // trailer as "incorrect data check" / "incorrect length check").
  static std::string damage_text(const char* msg) {
    const std::string m = msg ? msg : "";
    if (m.find("incorrect data check") != std::string::npos)
      return "the gzip CRC-32 check failed: the compressed data is damaged (the decompressed bytes differ from "
             "what the file's gzip trailer records); get a fresh copy of the file";
    if (m.find("incorrect length check") != std::string::npos)
      return "the gzip length check failed: the decompressed size differs from the one the file's gzip trailer "
             "records (damaged file); get a fresh copy of the file";
    if (m.find("unexpected end of file") != std::string::npos)
      return "the gzip stream is truncated (the file ends inside the compressed data or its trailer)";
    return str_cat("the gzip stream is corrupt (zlib: ", m, ")");
  }

  std::string path_;
  gzFile f_ = nullptr;
  uint64_t pos_ = 0;
  uint64_t file_size_ = 0;
};

struct TypeCode {
  uint8_t code;
  DType dtype;
};
constexpr TypeCode kTypes[] = {{0x08, kUInt8}, {0x09, kInt8}, {0x0B, kInt16}, {0x0C, kInt32}, {0x0D, kFloat32}, {0x0E, kFloat64}};

// IDX data is big-endian.
void to_host_order(char* p, uint64_t n_elems, int64_t itemsize) {
  if (itemsize == 1 || std::endian::native == std::endian::big) return;
  for (uint64_t i = 0; i < n_elems; ++i, p += itemsize) std::reverse(p, p + itemsize);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  IdxStream in(path);
  uint8_t head[4];
  uint64_t got = in.read(head, 4);
  if (got < 4) in.fail(got, str_cat("file ends inside the 4-byte magic number (", got, " bytes in the file)"));
  if (head[0] != 0 || head[1] != 0)
    in.fail(0, str_cat("bad magic bytes ", hex_byte(head[0]), " ", hex_byte(head[1]),
                       ", expected 0x00 0x00 (is this an IDX file?)"));
  const TypeCode* tc = std::find_if(std::begin(kTypes), std::end(kTypes), [&](const TypeCode& t) { return t.code == head[2]; });
  if (tc == std::end(kTypes))
    in.fail(2, str_cat("unknown element type code ", hex_byte(head[2]),
                       ", expected 0x08 (uint8), 0x09 (int8), 0x0B (int16), 0x0C (int32), 0x0D (float32) or 0x0E (float64)"));
  const DType dtype = tc->dtype;
  const int ndims = head[3];
  if (ndims < 1 || ndims > kIdxMaxDims)
    in.fail(3, str_cat("number of dimensions is ", ndims, ", expected 1 to ", kIdxMaxDims));

  uint8_t dims_raw[4 * kIdxMaxDims];
  const uint64_t dims_bytes = 4 * static_cast<uint64_t>(ndims);
  got = in.read(dims_raw, dims_bytes);
  if (got < dims_bytes)
    in.fail(4 + got, str_cat("file ends inside the header: ", ndims, " dimension sizes need ", dims_bytes,
                             " bytes after offset 4, found ", got));
  DimVector sizes;
  uint64_t numel = 1;
  for (int i = 0; i < ndims; ++i) {
    const uint8_t* b = dims_raw + 4 * i;
    uint32_t n = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
    if (n == 0) in.fail(4 + 4 * static_cast<uint64_t>(i), str_cat("dimension ", i, " is 0, expected a positive size"));
    sizes.push_back(static_cast<int64_t>(n));
    numel *= n;  // at most (2^32 - 1)^kIdxMaxDims: checked below before it can matter
  }
  const uint64_t itemsize = static_cast<uint64_t>(element_size(dtype));
  uint64_t nbytes = 1;
  bool overflow = false;
  {
    uint64_t prod = 1;
    for (int64_t s : sizes) overflow |= __builtin_mul_overflow(prod, static_cast<uint64_t>(s), &prod);
    overflow |= __builtin_mul_overflow(prod, itemsize, &nbytes);
    overflow |= nbytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / 2);
  }
  if (overflow) in.fail(4, str_cat("sizes ", sizes_str(sizes), " of ", dtype_name(dtype), " elements are too large"));
  const uint64_t data_start = 4 + dims_bytes;
  // Refuse what the file cannot hold before decompressing: past a sane size, or more than
  // its compressed bytes could expand to at deflate's best ratio. (A plain file that is
  // too short fails at its real end below, with the exact offset, having read only it.)
  if (nbytes > kIdxMaxBytes)
    in.fail(4, str_cat("sizes ", sizes_str(sizes), " of ", dtype_name(dtype), " elements need ", nbytes,
                       " bytes, more than the limit of ", kIdxMaxBytes));
  uint64_t most = in.file_size();  // the most data bytes the file can hold
  if (in.compressed()) {
    if (__builtin_mul_overflow(in.file_size(), kGzipMaxRatio, &most)) most = std::numeric_limits<uint64_t>::max();
    if (data_start + nbytes > most)
      in.fail(4, str_cat("sizes ", sizes_str(sizes), " of ", dtype_name(dtype), " elements need ", nbytes,
                         " bytes of data, but a gzip file of ", in.file_size(), " bytes decompresses to at most ",
                         most, " (deflate expands at most 1032:1): the header is wrong or the file is truncated"));
  }

  // Read incrementally: grow the buffer only as far as the stream really goes (and start
  // no larger than the file could hold, so a short file claiming much costs little).
  uint64_t cap = std::min({nbytes, kInitialChunk, std::max<uint64_t>(most, 1)});
  char* buf = static_cast<char*>(std::malloc(std::max<uint64_t>(cap, 1)));
  if (!buf) in.fail(data_start, str_cat("cannot allocate ", cap, " bytes"));
  uint64_t have = 0;
  try {
    while (have < nbytes) {
      if (have == cap) {
        uint64_t next = std::min(nbytes, cap * 2);
        char* grown = static_cast<char*>(std::realloc(buf, next));
        if (!grown) in.fail(data_start + have, str_cat("cannot allocate ", next, " bytes"));
        buf = grown;
        cap = next;
      }
      uint64_t r = in.read(buf + have, cap - have);
      have += r;
      if (have < cap) {  // read() comes up short only at the end of the stream
        in.fail(data_start + have, str_cat("data is truncated: sizes ", sizes_str(sizes), " of ", dtype_name(dtype),
                                           " need ", nbytes, " bytes after the ", data_start, "-byte header, found ",
                                           have));
      }
    }
    char extra;
    if (in.read(&extra, 1) != 0)
      in.fail(data_start + nbytes, str_cat("unexpected trailing bytes after the ", nbytes, " bytes of data (sizes ",
                                           sizes_str(sizes), " of ", dtype_name(dtype), ")"));
  } catch (...) {
    std::free(buf);
    throw;
  }
  to_host_order(buf, numel, static_cast<int64_t>(itemsize));
  return from_blob(buf, sizes, dtype, [](void* p) { std::free(p); });
}

}  // namespace tandem::data
