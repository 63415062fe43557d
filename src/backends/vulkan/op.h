// How a Vulkan kernel is defined: one file per op under backends/vulkan/ops/
// (named like the op's file in src/ops/), its shader(s) under shaders/, and a
// static registration:
//
//   static void record_relu(vulkan::OpContext& ctx) { ... ctx.dispatch_elements(...); }
//   KESTREL_VK_OP(Relu, {.record = record_relu});
//
// record() computes output shapes from the input shapes (and host inputs,
// such as Reshape's shape), allocates outputs and records dispatches. When it
// meets a case it does not handle (a dtype, a rank, a size), it calls
// ctx.unsupported(reason) before recording anything, and the node runs on the
// CPU for that run, with the reason reported.
#pragma once
#include <cstring>
#include <functional>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/context.h"
#include "backends/vulkan/memory.h"
#include "backends/vulkan/recorder.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/fused_checks.h"
#include "ops/rotary_tables.h"

namespace kestrel::vulkan {

// A tensor on the device. Float tensors (float32 and float16) are stored in
// the run's precision (float32, or float16 when `half`); int8 and uint8
// tensors packed four to a 32-bit word (little-endian; shaders sign-extend
// int8), so no 8-bit storage feature is needed; other integer and boolean
// tensors as int32 (int64 values outside int32's range stay on the host).
struct GpuTensor {
  DType dtype = DType::Undefined;  // the ONNX element type
  Shape shape;
  bool half = false;  // float storage is float16
  std::shared_ptr<DeviceMemory> memory;
  size_t view_offset = 0;  // bytes into memory where a view (a slice of a kernel's scratch) starts

  int64_t numel() const { return shape_numel(shape); }
  bool is_float() const { return dtype == DType::Float32 || dtype == DType::Float16; }
  bool is_byte() const { return dtype == DType::Int8 || dtype == DType::UInt8; }
  size_t element_bytes() const { return is_byte() ? 1 : half ? 2 : 4; }
  // Whole 32-bit words: packed bytes round up.
  size_t bytes() const { return (size_t(numel()) * element_bytes() + 3) / 4 * 4; }
  BufferRange range(bool write) const {
    return range_of(memory->a, view_offset, std::max<size_t>(bytes(), 4), write);
  }
};

// Thrown by OpContext::unsupported(): this node runs on the CPU this time.
struct Unsupported {
  std::string reason;
  // The reason is of the moment, not of the node's shapes (the memory budget
  // was full, a pipeline failed to build): the next run tries the GPU again
  // (partition.h).
  bool passing = false;
};

// A buffer binding of a dispatch: In(t) is read, Out(t) is written.
struct Binding {
  const GpuTensor* tensor;
  bool write;
};
inline Binding In(const GpuTensor& t) { return {&t, false}; }
inline Binding Out(const GpuTensor& t) { return {&t, true}; }

class OpContext {
 public:
  virtual ~OpContext() = default;
  explicit OpContext(const ir::Node& n) : node(n) {}
  const ir::Node& node;

  int num_inputs() const { return int(node.inputs.size()); }
  int num_outputs() const { return int(node.outputs.size()); }
  virtual bool has_input(int i) const = 0;
  // A device input (the op's declared host inputs are not available here).
  virtual const GpuTensor& input(int i) const = 0;
  // A host input: one the op lists in VkOpDef::host_inputs.
  virtual const Tensor& host_input(int i) const = 0;
  // Device input i's values checked on the host (indices in range, a mask's
  // form): `check` throws an Error naming what is wrong. It runs now and
  // again on each replay of a kept run, before anything is submitted, so a
  // graph input checked here, unlike a host input, leaves the run
  // replayable. A value computed on the device is read back for it.
  void check_values(int i, std::function<void(const Tensor&)> check) {
    recorded_for(i, [check = std::move(check)](const Tensor& t) {
      check(t);
      return std::vector<int64_t>{};  // (what is recorded does not depend on the values)
    });
  }
  // Device input i's values shape what this node records (a padding-free
  // encoder's live tokens): returns `key` of them now (key throws an Error
  // naming what is wrong with them; it runs again, as check_values' checks
  // do, on each replay). A kept run replays only for inputs of the same key;
  // others are recorded again.
  virtual std::vector<int64_t> recorded_for(int i, std::function<std::vector<int64_t>(const Tensor&)> key) = 0;
  // Allocates output i (float dtypes take the run's storage precision).
  virtual GpuTensor& output(int i, DType dtype, Shape shape) = 0;
  // Output i shares an existing tensor's memory (Reshape, Identity, Squeeze...).
  virtual void set_output(int i, const GpuTensor& t) = 0;
  // True when float tensors are stored as float16 in this run.
  virtual bool half() const = 0;
  virtual const DeviceInfo& device() const = 0;
  // At most this many query rows per attention chunk (0: no cap but the
  // device's; VulkanOptions::attention_chunk).
  virtual int64_t attention_chunk() const { return 0; }
  // The GEMM's output tile this run asks for (VulkanOptions::gemm_tiles).
  virtual GemmTiles gemm_tiles() const { return GemmTiles::Auto; }
  // Whether the integer products may take packed dot products (VulkanOptions::integer_dot).
  virtual IntegerDot integer_dot() const { return IntegerDot::Auto; }
  // How the fused encoders compute attention (VulkanOptions::attention_kernel).
  virtual AttentionKernel attention_kernel() const { return AttentionKernel::Auto; }
  // The run's ledger of fused-node checks (ops/fused_checks.h).
  virtual const ops::FusedChecks& fused_checks() const = 0;
  // The run's rotary tables (ops/rotary_tables.h).
  virtual ops::RotaryCache& rotary_cache() const = 0;
  // A small int32 constant for this run (indices, shapes), uploaded on use.
  virtual GpuTensor upload_i32(const std::vector<int32_t>& values) = 0;
  // A small float constant for this run (parameters folded on the host), in
  // the run's float storage.
  virtual GpuTensor upload_f32(const std::vector<float>& values) = 0;
  // Scratch memory of `words` 32-bit words for this node's dispatches
  // (partial reductions, parameters); uninitialized.
  virtual GpuTensor temp_words(size_t words) = 0;

  // Records `shader` (its variant for the run's precision) over gx*gy*gz
  // workgroups with `bindings` at 0..n-1 and `push` as push constants.
  virtual void dispatch(const std::string& shader, const std::vector<int32_t>& spec,
                        const std::vector<Binding>& bindings, const void* push, uint32_t push_bytes, uint32_t gx,
                        uint32_t gy = 1, uint32_t gz = 1) = 0;
  // Records an element-wise `shader` over n invocations (local size
  // `local_size`): `push` must begin with {uint base; uint n}, which are filled
  // here. Long work is split into bounded dispatches folded into 2-D grids.
  virtual void dispatch_elements(const std::string& shader, const std::vector<int32_t>& spec,
                                 const std::vector<Binding>& bindings, void* push, uint32_t push_bytes, uint64_t n,
                                 uint32_t local_size = 256) = 0;

  template <typename... A>
  [[noreturn]] void unsupported(const A&... parts) const {
    std::ostringstream os;
    (os << ... << parts);
    throw Unsupported{os.str()};
  }
  // The same for a reason of the moment, not of the node's shapes (a fused
  // node waits for its first check): the next run tries the GPU again.
  template <typename... A>
  [[noreturn]] void unsupported_for_now(const A&... parts) const {
    std::ostringstream os;
    (os << ... << parts);
    throw Unsupported{os.str(), /*passing=*/true};
  }
  template <typename... A>
  [[noreturn]] void fail(const A&... parts) const { ::kestrel::fail(node.where(), ": ", parts...); }
};

// What shaders/convert_float.comp does (its MODE): between float16 and
// float32 storage, or float32 words copied as they are (a float32 tensor
// inside a float16 node, whose own copy shader would move float16 elements).
enum class FloatConversion : int32_t { ToFloat32 = 0, ToFloat16 = 1, Float32Words = 2 };

// n float elements of x into y by convert_float.comp, in either storage variant.
inline void convert_float(OpContext& ctx, const GpuTensor& x, const GpuTensor& y, uint64_t n, FloatConversion c) {
  uint32_t p[3] = {0, 0, uint32_t(n)};  // {base, n, count}
  // ToFloat16 writes whole words: two elements an invocation.
  ctx.dispatch_elements("convert_float", {int32_t(c)}, {In(x), Out(y)}, p, sizeof p,
                        c == FloatConversion::ToFloat16 ? (n + 1) / 2 : n);
}

using RecordFn = void (*)(OpContext&);
// Static check at partition time: "" when the node can go to the GPU, else why not.
using CheckFn = std::string (*)(const ir::Node& node, const ir::Graph& graph);

struct VkOpDef {
  std::string name;
  std::string domain;  // "" is the default ONNX domain
  int min_opset = 1;
  int max_opset = 21;
  RecordFn record = nullptr;
  CheckFn check = nullptr;         // optional
  std::vector<int> host_inputs;    // inputs read on the host (shapes, axes, pads, scales)
  // Float outputs stay float32 when the node computes under float16 storage
  // (the rotary encoder's float32 stream is its output): their range does
  // not keep the node in float32 (precision_plan.h).
  bool float32_outputs = false;
  // The node computes in float32 storage in every run: its float inputs
  // come converted to float32 (a selection such as DetectionBoxes, whose
  // thresholds and score comparisons must be the CPU's).
  bool float32_node = false;
  const char* file = "";           // the source file that registers it (KESTREL_VK_OP sets it)
};

bool register_vk_op(VkOpDef def);
const VkOpDef* find_vk_op(const std::string& domain, const std::string& op, int opset);
std::vector<const VkOpDef*> all_vk_ops();

// Push-constant helpers: shapes and strides of up to 6 dims, right-aligned
// (leading dims padded with size 1), as int32 for shader indexing.
constexpr int kMaxRank = 6;
struct Dims6 {
  int32_t d[kMaxRank];
};
Dims6 dims6(const Shape& s);  // fails on rank > 6 (callers check first)
// Strides of `s` broadcast to `out`'s rank: 0 along broadcast dims.
Dims6 broadcast_strides6(const Shape& s, const Shape& out);

#define KESTREL_VK_CAT2(a, b) a##b
#define KESTREL_VK_CAT(a, b) KESTREL_VK_CAT2(a, b)
#define KESTREL_VK_OP(Name, ...)                                                                       \
  static const bool KESTREL_VK_CAT(kestrel_vk_registered_, __LINE__) = [] {                            \
    ::kestrel::vulkan::VkOpDef d __VA_ARGS__;                                                          \
    d.name = #Name;                                                                                    \
    d.file = __FILE__;                                                                                 \
    return ::kestrel::vulkan::register_vk_op(std::move(d));                                            \
  }()

}  // namespace kestrel::vulkan
