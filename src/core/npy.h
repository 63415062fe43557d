// Reading and writing NumPy .npy files (format 1.0/2.0, little-endian,
// C order), the exchange format of the CLI and the ONNX Runtime reference script.
#pragma once
#include <istream>
#include <string>

#include "core/tensor.h"

namespace kestrel {

// Reads a whole .npy file; errors name the path and what is wrong with it.
Tensor read_npy(const std::string& path);
// The same from a stream holding exactly one .npy file; `name` names it in errors.
Tensor read_npy(std::istream& in, const std::string& name);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace kestrel
