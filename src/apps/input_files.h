// The CLI's input files: --input NAME=FILE reads one tensor from a .npy
// (numpy.save) or a .pb (an ONNX TensorProto, as ONNX's test data stores
// inputs: test_data_set_0/input_0.pb); --inputs FILE.npz reads every array of
// a numpy archive (numpy.savez or savez_compressed), each named by its key.
#pragma once
#include <map>
#include <string>

#include "core/tensor.h"

namespace kestrel::cli {

// One tensor from FILE.npy or FILE.pb; anything else fails naming the file.
Tensor read_input_file(const std::string& path);
// Every array of FILE.npz, by name ("input" for the member input.npy).
std::map<std::string, Tensor> read_npz(const std::string& path);

}  // namespace kestrel::cli
