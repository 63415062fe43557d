// Host tensors to and from device storage: float tensors in the run's
// precision, integer and boolean tensors as int32.
#pragma once
#include <string>

#include "backends/backend.h"
#include "backends/vulkan/op.h"

namespace kestrel::vulkan {

// "" when `t` can live on the device, else why not (dtype, int64 range).
std::string storable(const Tensor& t);
// Bytes of `t` in device storage.
size_t storage_bytes(const Tensor& t, bool half);
// Writes `t` in device storage form to dst (storage_bytes(t, half) bytes);
// large float tensors convert or copy on up to `threads` threads.
void write_storage(const Tensor& t, bool half, uint8_t* dst, int threads = 1);
// Reads a device tensor's bytes back as a host tensor of its ONNX dtype
// (likewise on up to `threads` threads): into `into` when that is a tensor
// of g's dtype and shape (a caller's output), else into a new one.
Tensor read_storage(const GpuTensor& g, const uint8_t* src, int threads = 1, const Tensor& into = Tensor());
// The tensor the sink gives for output `index` of g's dtype and shape, or
// an undefined one without a sink (read_storage takes it only if it fits).
Tensor output_destination(const backends::OutputSink* sink, size_t index, const GpuTensor& g);
// Which dtypes a device tensor may have.
bool device_dtype(DType t);

}  // namespace kestrel::vulkan
