#pragma once
// `tandem run MODEL.onnx --input FILE ...`: runs an ONNX model (tandem::onnx) on inputs
// read from TensorProto (.pb) or NumPy (.npy) files, eagerly or compiled, and prints (or
// writes) its outputs, optionally with a per-op / per-node profile. `tandem export`
// writes a reference model (and a checkpoint's weights) as an ONNX file.
#include <string>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem::tools {

/// The --help text of `tandem run`.
std::string run_usage();

/// Entry point of `tandem run ARGS...`: returns the exit status (0 done, 1 error, 2 bad
/// usage).
int run_main(const std::vector<std::string>& args);

/// The --help text of `tandem export`.
std::string export_usage();
/// Entry point of `tandem export --model mlp|cnn [--checkpoint PATH] --out FILE.onnx
/// [--batch N]`: writes the reference model (with the checkpoint's weights) as an ONNX
/// model for a float32 input [N, 1, 28, 28]; returns the exit status (0, 1 error, 2 usage).
int export_main(const std::vector<std::string>& args);

/// Reads a NumPy .npy file (format versions 1-3; little-endian or byte-order-free
/// dtypes f2 f4 f8 i1 i2 i4 i8 u1 b1; C order) as a tensor. RuntimeError naming the file
/// for an unreadable or malformed file (bad magic, header, dtype, Fortran order, a shape
/// whose data the file does not hold).
Tensor load_npy(const std::string& path);

}  // namespace tandem::tools
