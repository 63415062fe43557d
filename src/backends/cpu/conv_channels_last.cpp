// The CPU backend's ConvChannelsLast (ops/conv_channels_last.cpp): oneDNN's
// convolution on channels-last tensors. On [N, H, W, C] oneDNN's JIT kernels
// (depthwise, 1x1 and direct, AVX2 and AVX-512) read a pixel's channels as
// one vector: no shifted loads, padding copies or partly used blocks, which
// is where the planar kernels lose to ONNX Runtime's blocked layout inside a
// chain of convolutions (BENCHMARKS.md). The primitive and its reordered
// weights are made once per input shape and thread count and kept in the
// compiled graph's node state, so the weight must be a constant, as the
// layout pass (channels_last.h) gives it. Relu, LeakyRelu and Clip run in
// oneDNN's post-op; a residual is copied into the output for
// oneDNN's sum post-op; other activations run on the output after, by
// ops/activation.h's kernels.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/fast_products.h"
#include "backends/cpu/nhwc_conv.h"
#include "backends/cpu/nhwc_depthwise.h"
#include "backends/cpu/onednn_engine.h"
#include "ops/common.h"
#include "ops/conv.h"
#include "ops/conv_channels_last.h"
#include "ops/epilogue.h"
#include "ops/node_state.h"

namespace kestrel::backends::cpu {
namespace {

using ops::ConvShape;
using ops::KernelContext;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// oneDNN memory objects for one execution's source, destination, bias and
// scratch, made once and pointed at each run's buffers: making them on every
// run (an aligned allocation each) cost more than a small layer's kernel.
struct Bound {
  dnnl::memory src, dst, bias, scratch;
};

struct Prepared {
  dnnl::convolution_forward conv;
  dnnl::memory weights;  // in the layout the primitive chose
  dnnl::memory::desc src, dst, bias, scratchpad;
  // Bound objects not in use: runs on several threads may execute this
  // primitive at once, each with its own.
  std::mutex idle_mu;
  std::vector<std::unique_ptr<Bound>> idle;

  std::unique_ptr<Bound> take() {
    {
      std::lock_guard<std::mutex> lock(idle_mu);
      if (!idle.empty()) {
        std::unique_ptr<Bound> b = std::move(idle.back());
        idle.pop_back();
        return b;
      }
    }
    auto b = std::make_unique<Bound>();
    b->src = dnnl::memory(src, onednn_engine(), DNNL_MEMORY_NONE);
    b->dst = dnnl::memory(dst, onednn_engine(), DNNL_MEMORY_NONE);
    b->bias = dnnl::memory(bias, onednn_engine(), DNNL_MEMORY_NONE);
    b->scratch = dnnl::memory(scratchpad, onednn_engine(), DNNL_MEMORY_NONE);
    return b;
  }
  void give_back(std::unique_ptr<Bound> b) {
    std::lock_guard<std::mutex> lock(idle_mu);
    idle.push_back(std::move(b));
  }
};

// The activations oneDNN applies as a post-op (exact ones); false for the
// others, which run after on the output. (oneDNN's swish post-op took
// YOLOX-nano's 1x1 layers 20 % longer than the separate pass.)
bool onednn_activation(const ops::Epilogue& e, dnnl::algorithm& alg, float& alpha, float& beta) {
  alpha = beta = 0.f;
  switch (e.kind) {
    case ops::Activation::Relu: alg = dnnl::algorithm::eltwise_relu; return true;
    case ops::Activation::LeakyRelu: alg = dnnl::algorithm::eltwise_relu, alpha = e.a; return true;
    case ops::Activation::Clip: alg = dnnl::algorithm::eltwise_clip_v2, alpha = e.a, beta = e.b; return true;
    default: return false;
  }
}

std::shared_ptr<Prepared> prepare(const ConvShape& s, const float* w, bool bias, bool sum, const ops::Epilogue& epi) {
  const ops::WindowGeom& g = s.g;
  const dnnl::memory::dims src{s.N, s.C, g.in[0], g.in[1]}, dst{s.N, s.M, g.out[0], g.out[1]};
  const bool grouped = s.group > 1;
  const dnnl::memory::dims wdims = grouped ? dnnl::memory::dims{s.group, s.Mg, s.Cg, g.kernel[0], g.kernel[1]}
                                           : dnnl::memory::dims{s.M, s.Cg, g.kernel[0], g.kernel[1]};
  auto p = std::make_shared<Prepared>();
  p->src = dnnl::memory::desc(src, dt::f32, tag::nhwc);
  p->dst = dnnl::memory::desc(dst, dt::f32, tag::nhwc);
  p->bias = dnnl::memory::desc({s.M}, dt::f32, tag::x);
  const dnnl::memory::desc w_any(wdims, dt::f32, tag::any);
  dnnl::post_ops po;
  if (sum) po.append_sum(1.f);
  dnnl::algorithm alg;
  float alpha, beta;
  if (onednn_activation(epi, alg, alpha, beta)) po.append_eltwise(1.f, alg, alpha, beta);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  // Runs on several threads may execute one primitive at once: each brings
  // its own scratch memory rather than share the library's.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // oneDNN counts dilation from 0.
  const dnnl::memory::dims strides{g.stride[0], g.stride[1]}, dil{g.dil[0] - 1, g.dil[1] - 1},
      pl{g.pad_begin[0], g.pad_begin[1]}, pr{g.pad_end[0], g.pad_end[1]};
  auto d = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                  dnnl::algorithm::convolution_direct, p->src, w_any, p->bias, p->dst,
                                                  strides, dil, pl, pr)
                : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                  dnnl::algorithm::convolution_direct, p->src, w_any, p->dst, strides,
                                                  dil, pl, pr);
  dnnl::convolution_forward::primitive_desc pd(d, attr, onednn_engine());
  p->conv = dnnl::convolution_forward(pd);
  p->scratchpad = pd.scratchpad_desc();
  // The ONNX weight as it is, reordered once into the primitive's layout.
  dnnl::memory user(dnnl::memory::desc(wdims, dt::f32, grouped ? tag::goihw : tag::oihw), onednn_engine(),
                    const_cast<float*>(w));
  p->weights = dnnl::memory(pd.weights_desc(), onednn_engine());
  dnnl::reorder(user, p->weights).execute(onednn_stream(), user, p->weights);
  onednn_stream().wait();
  return p;
}

// A 1x1 layer with a planar output (kPlanarOutputAttr): Y [M, P] = W
// [M, C] X^T per image, X [P, C] being the channels-last input, then the
// bias and activation on each row as the planar Conv finishes them. The
// layout pass sets it on 1x1 layers of fewer than 16 channels, for which
// oneDNN pads the channels to a vector and took 2x to 3x the planar time
// (UltraFace's 64 -> 8 at 30x40: 0.028 against 0.014 ms).
bool pointwise(const ConvShape& s) {
  const ops::WindowGeom& g = s.g;
  bool plain = s.group == 1 && g.kernel_size() == 1;
  for (int d = 0; d < g.nd; ++d)
    plain = plain && g.stride[size_t(d)] == 1 && g.pad_begin[size_t(d)] == 0 && g.pad_end[size_t(d)] == 0;
  return plain;
}

void planar_pointwise(KernelContext& ctx, const ConvShape& s, const Tensor& X, const Tensor& W,
                      const float* bias, const Tensor* residual, const ops::Epilogue& epi) {
  const int64_t P = s.g.out_size(), M = s.M, C = s.C;
  Tensor& Y = ctx.output(0, DType::Float32, ops::conv_out_shape(s));
  if (Y.numel() == 0) return;
  const float* x = X.data<float>();
  const float* w = W.data<float>();
  float* y = Y.data<float>();
  for (int64_t n = 0; n < s.N; ++n) fast_sgemm(false, true, M, P, C, 1.f, w, C, x + n * P * C, C, 0.f, y + n * M * P, P);
  const float* r = residual ? residual->data<float>() : nullptr;
  ops::parallel_for(ctx, s.N * M, 4, [&](int64_t i) {
    epi.finish(y + i * P, P, bias ? bias + i % M : nullptr, r ? r + i * P : nullptr);
  });
}

// The shape checks and geometry, on the channels-first view of X's dims.
ConvShape geometry(KernelContext& ctx, const Tensor& X, const Tensor& W) {
  return ops::conv_shape(ctx, X.reshaped({X.dim(0), X.dim(3), X.dim(1), X.dim(2)}), W);
}

// What a run of one node at one input shape needs, found on its first run
// and kept in the node state: the geometry (conv_shape reads the attributes
// by name and fills seven vectors, a tenth of a small layer's run) and the
// kernel's prepared weights.
struct NodePlan {
  ConvShape s;
  const float* bias = nullptr;
  ops::Epilogue epi;
  std::shared_ptr<NhwcPacked> nhwc;               // Kestrel's dense kernel's (nhwc_conv.h),
  std::shared_ptr<NhwcDepthwisePacked> depthwise;  // its depthwise one's (nhwc_depthwise.h; its
  const NhwcDepthwiseKernel* depthwise_kernel = nullptr;  // kernel), or
  std::shared_ptr<Prepared> onednn;               // oneDNN's primitive's
};

std::shared_ptr<NodePlan> plan_node(KernelContext& ctx, const Tensor& X, const Tensor& W, bool residual) {
  auto plan = std::make_shared<NodePlan>();
  const ConvShape& s = plan->s = geometry(ctx, X, W);
  const float* bias = plan->bias = ops::conv_float_operands(ctx, s);
  plan->epi = ops::Epilogue::of(ctx.node);
  // Depthwise layers where Kestrel's kernel is the faster (nhwc_depthwise_for).
  if (const NhwcDepthwiseKernel* k = nhwc_depthwise_for(s)) {
    plan->depthwise_kernel = k;
    ops::StateKey key;
    key.tag("depthwise").add(W.data<float>()).add(bias).add(k->width);
    auto pack = [&] {
      return std::make_shared<NhwcDepthwisePacked>(pack_nhwc_depthwise(s, k->width, W.data<float>(), bias));
    };
    plan->depthwise =
        ctx.node_state() ? ctx.node_state()->get<NhwcDepthwisePacked>(&ctx.node, key.str(), pack) : pack();
    return plan;
  }
  // Dense windows on AVX2 without AVX-512: Kestrel's own kernel, its packed
  // weights shared by the node's plans for other shapes.
  if (nhwc_conv_kernel() && nhwc_conv_suits(s, residual)) {
    ops::StateKey key;
    key.tag("nhwc").add(W.data<float>()).add(bias);
    auto pack = [&] { return std::make_shared<NhwcPacked>(pack_nhwc_conv(s, W.data<float>(), bias)); };
    plan->nhwc = ctx.node_state() ? ctx.node_state()->get<NhwcPacked>(&ctx.node, key.str(), pack) : pack();
    return plan;
  }
  try {
    plan->onednn = prepare(s, W.data<float>(), bias, residual, plan->epi);
  } catch (const dnnl::error& e) {
    ctx.fail("oneDNN has no convolution for input ", shape_str(X.shape()), " and weight ", shape_str(W.shape()),
             ": ", e.what());
  }
  return plan;
}

void run_conv_channels_last(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  if (X.rank() != 4 || W.rank() != 4 || X.dtype() != DType::Float32 || W.dtype() != DType::Float32)
    return run_reference_kernel(ctx);  // (which names what is wrong)
  if (ctx.node.attr_i(ops::kPlanarOutputAttr, 0)) {
    const ConvShape s = geometry(ctx, X, W);
    const float* bias = ops::conv_float_operands(ctx, s);
    if (!pointwise(s)) return run_reference_kernel(ctx);
    const Tensor* r = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (r && (r->dtype() != DType::Float32 || r->shape() != ops::conv_out_shape(s))) return run_reference_kernel(ctx);
    return planar_pointwise(ctx, s, X, W, bias, r, ops::Epilogue::of(ctx.node));
  }
  if (X.numel() == 0) return run_reference_kernel(ctx);
  const Tensor* residual = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  // A plan is found again only for the same input shape, weight and bias
  // (constants: the same address is the same tensor), which its checks passed.
  ops::StateKey key;
  key.tag("plan").add_all(X.shape()).add(ctx.threads()).add(W.raw()).add(ctx.has_input(2) ? ctx.input(2).raw() : nullptr);
  // (and the CPU level: the kernel a plan chose is one level's, and the
  // process's cap may change between runs)
  key.add(bool(residual)).add(int(cpu_isa()));
  auto make = [&] { return plan_node(ctx, X, W, residual != nullptr); };
  const std::shared_ptr<NodePlan> plan =
      ctx.node_state() ? ctx.node_state()->get<NodePlan>(&ctx.node, key.str(), make) : make();
  const ConvShape& s = plan->s;
  const float* bias = plan->bias;
  const ops::Epilogue& epi = plan->epi;
  const Shape out{s.N, s.g.out[0], s.g.out[1], s.M};
  if (residual && (residual->dtype() != DType::Float32 || residual->shape() != out))
    ctx.fail("residual ", dtype_name(residual->dtype()), " ", shape_str(residual->shape()), " must be float32 ",
             shape_str(out), " as the output");
  Tensor& Y = ctx.output(0, DType::Float32, out);
  if (Y.numel() == 0) return;
  if (plan->depthwise)
    return nhwc_depthwise(ctx.threads(), *plan->depthwise_kernel, s, X.data<float>(), *plan->depthwise,
                          residual ? residual->data<float>() : nullptr, epi, Y.data<float>());
  if (plan->nhwc) {
    const NhwcConvKernel* k = nhwc_conv_kernel();
    return nhwc_conv(ctx.threads(), *k, s, X.data<float>(), *plan->nhwc, residual ? residual->data<float>() : nullptr,
                     epi, Y.data<float>());
  }
  dnnl::algorithm alg;
  float alpha, beta;
  const bool fused_activation = onednn_activation(epi, alg, alpha, beta);
  Prepared* p = plan->onednn.get();
  if (residual) std::memcpy(Y.raw(), residual->raw(), Y.nbytes());
  static thread_local std::vector<uint8_t> scratch;
  scratch.resize(std::max<size_t>(scratch.size(), p->scratchpad.get_size()));
  std::unique_ptr<Bound> b = p->take();
  b->src.set_data_handle(const_cast<float*>(X.data<float>()));
  b->dst.set_data_handle(Y.data<float>());
  b->scratch.set_data_handle(scratch.data());
  dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, b->src.get()},
                             {DNNL_ARG_WEIGHTS, p->weights.get()},
                             {DNNL_ARG_DST, b->dst.get()},
                             {DNNL_ARG_SCRATCHPAD, b->scratch.get()}};
  int nargs = 4;
  if (bias) {
    b->bias.set_data_handle(const_cast<float*>(bias));
    args[nargs++] = {DNNL_ARG_BIAS, b->bias.get()};
  }
  // (the C call: the C++ one takes its arguments in a hash map built per run)
  const dnnl_status_t st = dnnl_primitive_execute(p->conv.get(), onednn_stream().get(), nargs, args);
  p->give_back(std::move(b));
  if (st != dnnl_success) ctx.fail("oneDNN's convolution failed (status ", int(st), ")");
  onednn_stream().wait();
  if (epi.kind == ops::Activation::None || fused_activation) return;
  // The other activations on the finished output, in cache-sized pieces.
  constexpr int64_t kPiece = 1 << 14;
  float* y = Y.data<float>();
  const int64_t n = Y.numel(), pieces = (n + kPiece - 1) / kPiece;
  ops::parallel_for(ctx, pieces, 1, [&](int64_t i) { epi.apply(y + i * kPiece, std::min(kPiece, n - i * kPiece)); });
}

}  // namespace

KESTREL_CPU_KERNEL(ConvChannelsLast, {.domain = "com.kestrel", .run = run_conv_channels_last});

}  // namespace kestrel::backends::cpu
