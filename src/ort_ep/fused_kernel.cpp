#include "ort_ep/fused_kernel.h"

#include <cstring>
#include <map>

#include "core/error.h"
#include "ort_ep/graph_model.h"
#include "ort_ep/ort_api.h"

namespace kestrel::ort_ep {
namespace {

const OrtApi& ort() { return *api().ort; }

// ONNX Runtime's tensor as a Kestrel tensor over the same bytes: the
// storage's deleter does nothing, since ONNX Runtime owns them for the run.
Tensor view_of(const OrtValue* v, const std::string& name) {
  TensorType type = tensor_type(v);
  const DType dtype = DType(type.element_type);
  if (!dtype_supported(dtype))
    fail_as(ErrorKind::NotImplemented, "input '", name, "' has an element type Kestrel does not hold (",
            type.element_type, ")");
  Shape shape = std::move(type.dims);
  const void* data = nullptr;
  if (tensor_nbytes(dtype, shape) > 0) check(ort().GetTensorData(v, &data), "GetTensorData");
  std::shared_ptr<uint8_t[]> bytes(static_cast<uint8_t*>(const_cast<void*>(data)), [](uint8_t*) {});
  return Tensor(dtype, std::move(shape), std::move(bytes));
}

// Output o of the fused node, allocated by ONNX Runtime at `shape` (the same
// tensor each time it is asked for at that shape), as a Kestrel tensor over
// its bytes.
Tensor output_tensor(OrtKernelContext* ctx, size_t o, DType dtype, const Shape& shape) {
  OrtValue* out = nullptr;
  check(ort().KernelContext_GetOutput(ctx, o, shape.data(), shape.size(), &out), "KernelContext_GetOutput");
  void* data = nullptr;
  if (tensor_nbytes(dtype, shape) > 0) check(ort().GetTensorMutableData(out, &data), "GetTensorMutableData");
  std::shared_ptr<uint8_t[]> bytes(static_cast<uint8_t*>(data), [](uint8_t*) {});
  return Tensor(dtype, shape, std::move(bytes));
}

OrtStatus* ORT_API_CALL create_state(OrtNodeComputeInfo* self, OrtNodeComputeContext*, void** state) noexcept {
  *state = self;  // the kernel is its own state: a session runs from any number of threads at once
  return nullptr;
}

OrtStatus* ORT_API_CALL compute(OrtNodeComputeInfo*, void* state, OrtKernelContext* ctx) noexcept {
  KESTREL_ORT_GUARD(
      auto& k = *static_cast<FusedKernel*>(state);
      size_t count = 0;
      check(ort().KernelContext_GetInputCount(ctx, &count), "KernelContext_GetInputCount");
      if (count != k.inputs.size())
        fail("the fused node has ", count, " inputs at run time, ", k.inputs.size(), " when compiled");
      std::map<std::string, Tensor> inputs;
      for (size_t i = 0; i < count; ++i) {
        if (!k.input_used[i]) continue;
        const OrtValue* v = nullptr;
        check(ort().KernelContext_GetInput(ctx, i, &v), "KernelContext_GetInput");
        inputs.emplace(k.inputs[i], view_of(v, k.inputs[i]));
      }
      // Outputs the Vulkan backend reads back from the device go straight
      // into ONNX Runtime's tensors; any other is copied there once.
      std::vector<Tensor> given(k.outputs.size());  // what the sink handed out, per fused output
      const backends::OutputSink sink = [&](size_t j, DType dtype, const Shape& shape) {
        const size_t o = k.fused_output_of(j);
        if (o == k.outputs.size()) return Tensor();
        return given[o] = output_tensor(ctx, o, dtype, shape);
      };
      RunControl control;
      control.output_sink = &sink;
      const std::vector<Tensor> results = k.session->run(inputs, control);
      for (size_t o = 0; o < k.outputs.size(); ++o) {
        const Tensor& r = results[k.output_index[o]];
        if (given[o].defined() && given[o].raw() == r.raw()) continue;  // read back in place
        Tensor dst = output_tensor(ctx, o, r.dtype(), r.shape());
        if (r.nbytes() > 0) std::memcpy(dst.raw(), r.raw(), r.nbytes());
      })
}

void ORT_API_CALL release_state(OrtNodeComputeInfo*, void*) noexcept {}

}  // namespace

FusedKernel::FusedKernel(uint32_t api_version, std::unique_ptr<Session> s, std::vector<std::string> in,
                         std::vector<std::string> out)
    : OrtNodeComputeInfo{}, session(std::move(s)), inputs(std::move(in)), outputs(std::move(out)) {
  ort_version_supported = api_version;
  CreateState = create_state;
  Compute = compute;
  ReleaseState = release_state;
  input_used.assign(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i)
    for (const TensorInfo& t : session->inputs()) input_used[i] = input_used[i] || t.name == inputs[i];
  for (const std::string& name : outputs) {
    size_t found = session->outputs().size();
    for (size_t j = 0; j < session->outputs().size(); ++j)
      if (session->outputs()[j].name == name) found = j;
    if (found == session->outputs().size()) fail("the fused node's output '", name, "' is not the compiled graph's");
    output_index.push_back(found);
  }
}

}  // namespace kestrel::ort_ep
