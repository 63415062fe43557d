// Host tensors to and from device storage: float tensors in the run's
// precision, integer and boolean tensors as int32.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "backends/vulkan/op.h"

namespace kestrel::vulkan {

// f(begin, end) over [0, n) elements of `unit` bytes, on up to `threads`
// threads when they are 8 MB or more. A run's inputs and outputs pass
// through here on every run (and a float16 run's outputs again, checked for
// infinities: precision_calibration.cpp), and one thread converts or copies at a few
// GB/s: SAM's 1024x1024 image is 12 MB of float32, whose conversion on
// several threads took SAM's replayed run on the H200 from 16.1-16.2 to
// 14.3-14.9 ms (BENCHMARKS.md). Smaller tensors stay on the calling thread:
// OpenMP's workers spin after a region, and with every transfer split, M-LSD
// (1.6 MB in) ran 0.4-0.5 ms slower a run on that host.
template <class F> void in_blocks(int64_t n, int64_t unit, int threads, F&& f) {
  constexpr int64_t kParallelBytes = int64_t(8) << 20, kBlockBytes = int64_t(1) << 20;
  if (threads <= 1 || n * unit < kParallelBytes) {
    f(int64_t(0), n);
    return;
  }
  const int64_t block = kBlockBytes / unit, blocks = (n + block - 1) / block;
  const int use = int(std::min<int64_t>(threads, blocks));
#pragma omp parallel for num_threads(use) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) f(b * block, std::min(n, (b + 1) * block));
}
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
