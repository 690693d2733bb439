// libFuzzer target: load_safetensors on arbitrary bytes. Every input must either load or
// raise a tandem::Error whose message stays short (bounded excerpts, never a whole
// hostile value); crashes, sanitizer reports, leaks and hangs are findings.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fuzz_input.h"
#include "tandem/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tandem::fuzz::input_file(data, size);
  try {
    tandem::io::SafetensorsContents c = tandem::io::load_safetensors(path);
    for (const auto& [name, t] : c.tensors)
      if (!t.defined() || !t.is_contiguous()) std::abort();
  } catch (const tandem::Error& e) {
    // The path, a fixed text and a few bounded excerpts: far below 2 KB.
    if (std::strlen(e.what()) > 2048) std::abort();
  }
  return 0;
}
