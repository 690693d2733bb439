// libFuzzer target: read_idx on arbitrary bytes (plain or gzip'd IDX). Every input must
// either load or raise a tandem::Error; crashes, sanitizer reports, leaks and hangs are
// findings. The loaded tensor is checked against the header it came from.
#include <cstdint>
#include <cstdlib>

#include "fuzz_input.h"
#include "tandem/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tandem::fuzz::input_file(data, size);
  try {
    tandem::Tensor t = tandem::data::read_idx(path);
    // What loaded must be what a plain header said: dims 1..4, every size positive.
    if (t.dim() < 1 || t.dim() > tandem::data::kIdxMaxDims || !t.is_contiguous()) std::abort();
    for (int64_t s : t.sizes())
      if (s <= 0) std::abort();
  } catch (const tandem::Error&) {
  }
  return 0;
}
