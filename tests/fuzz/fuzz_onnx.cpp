// libFuzzer target: the ONNX loader (tandem::onnx::load_model_from_bytes, and the same
// bytes as a TensorProto) on arbitrary bytes. Every input must either load or raise a
// tandem::Error with a bounded message; crashes, sanitizer reports, leaks and hangs are
// findings. External data is refused here (no base folder), so no input can make the
// loader open other files.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tandem/onnx/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    auto model = tandem::onnx::load_model_from_bytes(bytes, "fuzz.onnx");
    for (const auto& p : model->parameters())
      if (!p.defined() || !p.is_contiguous()) std::abort();
  } catch (const tandem::Error& e) {
    // Names quoted in messages come from the file: bounded by its size plus fixed text.
    if (std::strlen(e.what()) > 4096 + 4 * size) std::abort();
  }
  try {
    tandem::Tensor t = tandem::onnx::load_tensor_from_bytes(bytes, "fuzz.pb");
    if (!t.defined()) std::abort();
  } catch (const tandem::Error&) {
  }
  return 0;
}
