// Reading and writing NumPy .npy files (format 1.0/2.0, little-endian,
// C order), the exchange format of the CLI and the ONNX Runtime reference script.
#pragma once
#include <string>

#include "core/tensor.h"

namespace kestrel {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace kestrel
