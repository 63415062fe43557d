// Runs every registered op case (cases_*.cpp) on the reference kernels, on
// the CPU backend's fast kernels and on the Vulkan backend in float32 and
// float16 storage, prints the tables, and fails on any mismatch or
// unexpected CPU fallback.
#include <algorithm>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "backends/backend.h"
#include "backends/cpu/executor.h"
#include "backends/cpu/fast_kernels.h"
#include "backends/vulkan/op.h"
#include "backends/vulkan/vulkan_backend.h"
#include "harness.h"
#include "onnx/loader.h"
#include "ops/registry.h"
#include "runtime/config.h"

using namespace kestrel;
using namespace kestrel::backend_ops;

namespace {

// Attributes in Kestrel's own namespace (kestrel.*) are what its load-time
// passes write onto the graph (a fused epilogue); a model file may not carry
// them, since the loader checks every attribute against the op's schema.
// Cases that test such a node take them out of the file and set them on the
// loaded graph, as the passes do.
std::vector<std::pair<std::string, std::pair<std::string, ir::Attribute>>> take_internal_attributes(
    std::string& bytes) {
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) throw std::runtime_error("case model does not parse");
  std::vector<std::pair<std::string, std::pair<std::string, ir::Attribute>>> taken;  // node, (name, value)
  for (onnx::NodeProto& n : *m.mutable_graph()->mutable_node()) {
    auto* attrs = n.mutable_attribute();
    for (int k = attrs->size() - 1; k >= 0; --k) {
      const onnx::AttributeProto& a = attrs->Get(k);
      if (a.name().rfind("kestrel.", 0) != 0) continue;
      ir::Attribute v;
      if (a.type() == onnx::AttributeProto::INT) {
        v.kind = ir::Attribute::Kind::Int;
        v.i = a.i();
      } else if (a.type() == onnx::AttributeProto::FLOATS) {
        v.kind = ir::Attribute::Kind::Floats;
        v.floats.assign(a.floats().begin(), a.floats().end());
      } else {
        throw std::runtime_error("internal attribute '" + a.name() + "' of an unexpected type");
      }
      taken.push_back({n.name(), {a.name(), v}});
      attrs->DeleteSubrange(k, 1);
    }
  }
  m.SerializeToString(&bytes);
  return taken;
}

int onnx_type(DType t) {
  switch (t) {
    case DType::Float32: return onnx::TensorProto::FLOAT;
    case DType::Float16: return onnx::TensorProto::FLOAT16;
    case DType::Int64: return onnx::TensorProto::INT64;
    case DType::Int32: return onnx::TensorProto::INT32;
    case DType::Bool: return onnx::TensorProto::BOOL;
    case DType::UInt8: return onnx::TensorProto::UINT8;
    case DType::Int8: return onnx::TensorProto::INT8;
    default: throw std::runtime_error("harness: unsupported dtype");
  }
}

Tensor make_value(const InputSpec& s, std::mt19937& rng) {
  if (s.value.defined()) return s.value;
  std::uniform_real_distribution<float> u(s.lo, s.hi);
  Tensor f(DType::Float32, s.shape);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = u(rng);
  if (s.dtype == DType::Float32) return f;
  if (s.dtype == DType::Bool) {
    Tensor b(DType::Bool, s.shape);
    for (int64_t i = 0; i < b.numel(); ++i) b.data<uint8_t>()[i] = f.data<float>()[i] > (s.lo + s.hi) / 2;
    return b;
  }
  if (s.dtype == DType::Int64 || s.dtype == DType::Int32 || s.dtype == DType::Int8 || s.dtype == DType::UInt8) {
    for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = std::floor(f.data<float>()[i]);
  }
  return f.cast(s.dtype);
}

struct Built {
  std::string bytes;
  std::map<std::string, Tensor> feeds;  // graph inputs by name
};

// In float16 runs the inputs are made float16-representable first, so both
// backends see the same values and the comparison measures the kernel (its
// float16 intermediate and output rounding), not the rounding of the inputs.
Built build(const OpCase& c, size_t index, bool half) {
  std::mt19937 rng(unsigned(1000 + index));
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain(c.domain);
  o->set_version(c.opset);
  if (!c.domain.empty()) {  // every model imports the default domain too
    auto* d = m.add_opset_import();
    d->set_domain("");
    d->set_version(17);
  }
  auto* g = m.mutable_graph();
  g->set_name("case");
  auto* n = g->add_node();
  n->set_op_type(c.op);
  n->set_domain(c.domain);
  n->set_name("node");
  Built b;
  for (const InputSpec& s : c.inputs) {
    n->add_input(s.name);
    if (s.name.empty()) continue;
    Tensor v = make_value(s, rng);
    if (half && v.dtype() == DType::Float32) v = v.cast(DType::Float16).cast(DType::Float32);
    if (s.initializer) {
      auto* t = g->add_initializer();
      t->set_name(s.name);
      t->set_data_type(onnx_type(v.dtype()));
      for (int64_t d : v.shape()) t->add_dims(d);
      t->set_raw_data(std::string(reinterpret_cast<const char*>(v.raw()), v.nbytes()));
    } else {
      auto* vi = g->add_input();
      vi->set_name(s.name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnx_type(v.dtype()));
      auto* sh = tt->mutable_shape();
      for (int64_t d : v.shape()) sh->add_dim()->set_dim_value(d);
      b.feeds[s.name] = v;
    }
  }
  for (int i = 0; i < c.outputs; ++i) {
    std::string name = "y" + std::to_string(i);
    n->add_output(name);
    g->add_output()->set_name(name);
  }
  if (c.attrs) c.attrs(*n);
  m.SerializeToString(&b.bytes);
  return b;
}

// Case i as a loaded one-node model and its feeds, with the internal
// attributes set on the node as the passes would.
struct LoadedCase {
  onnx_io::Model model;
  std::map<std::string, Tensor> feeds;
};
LoadedCase load_case(const OpCase& c, size_t index, bool half) {
  Built b = build(c, index, half);
  auto internal = take_internal_attributes(b.bytes);
  LoadedCase lc{onnx_io::load_model_bytes(b.bytes.data(), b.bytes.size(), ""), std::move(b.feeds)};
  for (auto& [node, attr] : internal)
    for (ir::Node& n : lc.model.graph.nodes)
      if (n.name == node) n.attrs[attr.first] = attr.second;
  return lc;
}

struct Outcome {
  enum { Pass, Fail, Unsupported, Error } kind = Pass;
  std::string detail;
};

std::vector<Tensor> run_on(const backends::Backend& be, const ir::Graph& g, const std::map<std::string, Tensor>& feeds,
                           std::optional<backends::PlacementReport>* placement, int threads = 2) {
  auto compiled = be.compile(g);
  std::vector<Tensor> in;
  for (int v : g.inputs) in.push_back(feeds.at(g.values[size_t(v)].name));
  backends::RunOptions ro;
  ro.threads = threads;
  auto out = compiled->run(in, ro);
  if (placement) *placement = compiled->placement();
  return out;
}

Outcome compare(const OpCase& c, const std::vector<Tensor>& ref, const std::vector<Tensor>& got, bool half) {
  char buf[256];
  std::string detail;
  for (size_t k = 0; k < ref.size(); ++k) {
    if (ref[k].shape() != got[k].shape() || ref[k].dtype() != got[k].dtype())
      return {Outcome::Fail, "output " + std::to_string(k) + " is " + dtype_name(got[k].dtype()) + " " +
                                 shape_str(got[k].shape()) + ", expected " + dtype_name(ref[k].dtype()) + " " +
                                 shape_str(ref[k].shape())};
    if (!dtype_is_float(ref[k].dtype())) {
      std::vector<int64_t> r = ref[k].to_i64(), x = got[k].to_i64();
      int64_t worst = 0;
      for (size_t i = 0; i < r.size(); ++i) worst = std::max(worst, std::abs(r[i] - x[i]));
      if (worst > c.int_tolerance)
        return {Outcome::Fail, "output " + std::to_string(k) + " differs by up to " + std::to_string(worst) + " (integer)"};
      continue;
    }
    std::vector<float> r = ref[k].to_f32(), x = got[k].to_f32();
    double num = 0, den = 0, maxabs = 0, refmax = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      if (std::isnan(r[i]) != std::isnan(x[i])) return {Outcome::Fail, "NaN mismatch at " + std::to_string(i)};
      if (std::isnan(r[i])) continue;
      if (std::isinf(r[i]) || std::isinf(x[i])) {
        if (r[i] != x[i]) return {Outcome::Fail, "infinity mismatch at " + std::to_string(i)};
        continue;
      }
      double d = double(x[i]) - r[i];
      num += d * d;
      den += double(r[i]) * r[i];
      maxabs = std::max(maxabs, std::abs(d));
      refmax = std::max(refmax, double(std::abs(r[i])));
    }
    double nmse = den > 0 ? num / den : num;
    double nmse_tol = half ? c.fp16_nmse : c.fp32_nmse;
    double abs_tol = (half ? c.fp16_abs : c.fp32_abs) * std::max(1.0, refmax);
    std::snprintf(buf, sizeof buf, "%snmse %.1e maxabs %.1e", k ? "; " : "", nmse, maxabs);
    detail += buf;
    if (nmse > nmse_tol || maxabs > abs_tol) {
      std::snprintf(buf, sizeof buf, " (limits %.0e, %.1e)", nmse_tol, abs_tol);
      return {Outcome::Fail, detail + buf};
    }
  }
  return {Outcome::Pass, detail};
}

bool vulkan_tests_off() {
  const char* v = std::getenv("KESTREL_VULKAN_TESTS");
  return v && std::strcmp(v, "off") == 0;
}

// KESTREL_OPS_SHARD=I/N: only every Nth case from the Ith (0-based), so that
// scripts/validate_vulkan.sh can spread the instrumented cases over two cores.
struct Shard {
  size_t index = 0, count = 1;
};
Shard ops_shard() {
  Shard s;
  const char* v = std::getenv("KESTREL_OPS_SHARD");
  if (!v || !*v) return s;
  unsigned long i = 0, n = 0;
  if (std::sscanf(v, "%lu/%lu", &i, &n) != 2 || n == 0 || i >= n)
    throw std::runtime_error(std::string("KESTREL_OPS_SHARD must be I/N with 0 <= I < N, not '") + v + "'");
  s.index = i;
  s.count = n;
  return s;
}

// Every case (`only`: just the cases of these ops) on the Vulkan backend in
// `precision`, its scalar GEMM on `tiles`.
void run_precision(const std::string& precision, vulkan::GemmTiles tiles = vulkan::GemmTiles::Auto,
                   const std::vector<std::string>& only = {}, vulkan::IntegerDot dot = vulkan::IntegerDot::Auto) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  bool half = precision == "fp16";
  auto cpu = backends::make_cpu_backend(backends::CpuKernels::Reference);
  // As a session would have it (under the validation layer, scripts/validate_vulkan.sh,
  // KESTREL_VK_EXACT_BUFFERS=1 gives every tensor its own buffer, bounds-checked).
  backends::VulkanOptions vo = runtime::Config::of({}).vulkan;
  vo.precision = half ? backends::Precision::Fp16 : backends::Precision::Fp32;
  vo.keep_small_host_work = false;  // every case must reach the device
  if (tiles != vulkan::GemmTiles::Auto) vo.gemm_tiles = tiles;
  if (dot != vulkan::IntegerDot::Auto) vo.integer_dot = dot;
  auto vk = backends::make_vulkan_backend(vo);  // throws (fails the test) without a device
  const char* filter = std::getenv("KESTREL_OPS_FILTER");
  const Shard shard = ops_shard();
  int pass = 0, fail = 0, unsupported = 0, cpu_only = 0;
  std::printf("%-10s %-16s %-48s %s\n", "precision", "op", "case", "result");
  for (size_t i = 0; i < all_cases().size(); ++i) {
    const OpCase& c = all_cases()[i];
    if (filter && c.op != filter) continue;
    if (i % shard.count != shard.index) continue;
    if (!only.empty() && std::find(only.begin(), only.end(), c.op) == only.end()) continue;
    Outcome out;
    if (!c.no_vulkan_kernel.empty()) {  // checked on the CPU only, and only while the op has no Vulkan kernel
      EXPECT_EQ(vulkan::find_vk_op(c.domain, c.op, c.opset), nullptr)
          << c.op << " '" << c.label << "' says the op has no Vulkan kernel (" << c.no_vulkan_kernel << "), but it has";
      ++cpu_only;
      continue;
    }
    try {
      LoadedCase lc = load_case(c, i, half);
      auto ref = run_on(*cpu, lc.model.graph, lc.feeds, nullptr);
      std::optional<backends::PlacementReport> pl;
      auto got = run_on(*vk, lc.model.graph, lc.feeds, &pl);
      if (!pl || pl->gpu_nodes != 1) {
        std::string why = pl && !pl->cpu_reasons.empty() ? pl->cpu_reasons.begin()->first : "?";
        out = {Outcome::Unsupported, why};
      } else {
        out = compare(c, ref, got, half);
      }
    } catch (const std::exception& e) {
      out = {Outcome::Error, e.what()};
    }
    const char* verdict = out.kind == Outcome::Pass ? "pass" : out.kind == Outcome::Fail ? "FAIL"
                          : out.kind == Outcome::Unsupported ? "unsupported" : "ERROR";
    std::printf("%-10s %-16s %-48s %-11s %s\n", precision.c_str(), c.op.c_str(), c.label.c_str(), verdict,
                out.detail.c_str());
    bool expected_unsupported = half && !c.fp16_unsupported.empty();
    if (out.kind == Outcome::Pass) ++pass;
    else if (out.kind == Outcome::Unsupported) ++unsupported;
    else ++fail;
    if (out.kind == Outcome::Unsupported && expected_unsupported) continue;
    if (!c.vulkan_unsupported.empty()) {
      EXPECT_EQ(out.kind, Outcome::Unsupported) << precision << " " << c.op << " '" << c.label
                                                << "' should stay on the CPU (" << c.vulkan_unsupported << "): "
                                                << verdict << " " << out.detail;
      continue;
    }
    EXPECT_EQ(out.kind, Outcome::Pass) << precision << " " << c.op << " '" << c.label << "': " << verdict << " "
                                       << out.detail;
  }
  std::printf("%s: %d pass, %d fail, %d unsupported of %d cases run (and %d of ops with no Vulkan kernel)\n",
              precision.c_str(), pass, fail, unsupported, pass + fail + unsupported, cpu_only);
  if (!filter) EXPECT_GT(pass + fail + unsupported, 0) << "no case ran";
}

}  // namespace

// The CPU backend's fast kernels (backends/cpu/fast_kernels.h) and products
// (fast_products.h) against the reference kernels, on every case: an op
// without a fast kernel still computes with the fast products. Both sides
// compute in float32 and differ only in the order of their sums, so the
// float32 tolerances hold (integer outputs must match exactly).
TEST(BackendOps, CpuFastKernelsMatchReference) {
  auto reference = backends::make_cpu_backend(backends::CpuKernels::Reference);
  auto fast = backends::make_cpu_backend(backends::CpuKernels::Fast);
  const char* filter = std::getenv("KESTREL_OPS_FILTER");
  int pass = 0, fail = 0;
  for (size_t i = 0; i < all_cases().size(); ++i) {
    const OpCase& c = all_cases()[i];
    if (filter && c.op != filter) continue;
    Outcome out;
    try {
      LoadedCase lc = load_case(c, i, false);
      out = compare(c, run_on(*reference, lc.model.graph, lc.feeds, nullptr),
                    run_on(*fast, lc.model.graph, lc.feeds, nullptr), false);
    } catch (const std::exception& e) {
      out = {Outcome::Error, e.what()};
    }
    const bool has_fast = backends::cpu::find_fast_kernel(c.domain, c.op, c.opset) != nullptr;
    std::printf("%-10s %-16s %-48s %-5s %s\n", has_fast ? "cpu-fast" : "cpu", c.op.c_str(), c.label.c_str(),
                out.kind == Outcome::Pass ? "pass" : "FAIL", out.detail.c_str());
    out.kind == Outcome::Pass ? ++pass : ++fail;
    EXPECT_EQ(out.kind, Outcome::Pass) << c.op << " '" << c.label << "': " << out.detail;
  }
  std::printf("cpu fast against reference: %d pass, %d fail of %zu cases\n", pass, fail, all_cases().size());
}

// The reference kernels may split their work over threads (parallel_for,
// the reference products' rows), but each output is still computed by the
// same loop: the oracle gives the same bits at any thread count.
TEST(BackendOps, ReferenceKernelsGiveTheSameBitsAtAnyThreadCount) {
  auto reference = backends::make_cpu_backend(backends::CpuKernels::Reference);
  std::string differ;
  for (size_t i = 0; i < all_cases().size(); ++i) {
    const OpCase& c = all_cases()[i];
    LoadedCase lc = load_case(c, i, false);
    auto one = run_on(*reference, lc.model.graph, lc.feeds, nullptr, 1);
    auto three = run_on(*reference, lc.model.graph, lc.feeds, nullptr, 3);
    for (size_t k = 0; k < one.size(); ++k)
      if (one[k].shape() != three[k].shape() || one[k].nbytes() != three[k].nbytes() ||
          std::memcmp(one[k].raw(), three[k].raw(), one[k].nbytes()) != 0)
        differ += "\n  " + c.op + " '" + c.label + "' output " + std::to_string(k);
  }
  EXPECT_EQ(differ, "") << "reference outputs that change with the thread count:" << differ;
}

// Every fast CPU kernel is checked against its reference by a case above.
TEST(BackendOps, EveryFastCpuKernelHasAParityCase) {
  std::string missing;
  for (const backends::cpu::FastKernel* k : backends::cpu::all_fast_kernels()) {
    bool found = false;
    for (const OpCase& c : all_cases())
      found |= c.op == k->name && c.domain == k->domain && c.opset >= k->min_opset && c.opset <= k->max_opset;
    if (!found) missing += " " + k->name;
  }
  EXPECT_EQ(missing, "") << "fast CPU kernels without a parity case:" << missing;
}

namespace {
// The reference products, counting the calls made through them.
class CountingProducts final : public ops::Products {
 public:
  mutable int calls = 0;
  void sgemm(int t, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc) const override {
    ++calls;
    ops::reference_products().sgemm(t, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  void sgemm_batched(int t, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                     const int64_t* a_off, const float* B, int64_t ldb, const int64_t* b_off, float* C, int64_t ldc,
                     const int64_t* c_off, int64_t batch) const override {
    ++calls;
    ops::reference_products().sgemm_batched(t, ta, tb, M, N, K, A, lda, a_off, B, ldb, b_off, C, ldc, c_off, batch);
  }
  void igemm(int t, int64_t M, int64_t N, int64_t K, const int32_t* A, const int32_t* B, int32_t* C) const override {
    ++calls;
    ops::reference_products().igemm(t, M, N, K, A, B, C);
  }
};
}  // namespace

// OpDef::uses_products tells the truth for every case's op (its reference
// kernel multiplied through the run's products exactly when it is set), and
// every op that uses them has a case, so the fast products are checked
// wherever they stand in. The fused encoders are checked whole against ONNX
// Runtime instead (tests/families_test.cpp).
TEST(BackendOps, EveryOpOnTheProductsSaysSoAndHasAParityCase) {
  std::map<const ops::OpDef*, bool> multiplied;  // op -> some case of it called the products
  for (size_t i = 0; i < all_cases().size(); ++i) {
    const OpCase& c = all_cases()[i];
    LoadedCase lc = load_case(c, i, false);
    const ir::Graph& g = lc.model.graph;
    backends::cpu::Plan plan = backends::cpu::Plan::build(g, backends::CpuKernels::Reference);
    CountingProducts counting;
    plan.products = &counting;
    std::vector<Tensor> in;
    for (int v : g.inputs) in.push_back(lc.feeds.at(g.values[size_t(v)].name));
    backends::RunOptions ro;
    ro.threads = 2;
    backends::cpu::execute(plan, in, nullptr, ro);
    const ops::OpDef* def = plan.kernels.at(0);
    multiplied[def] = multiplied[def] || counting.calls > 0;
  }
  std::string wrong;
  for (const auto& [def, used] : multiplied)
    if (used != def->uses_products)
      wrong += "\n  " + def->name + (used ? " multiplies through the products but does not say so"
                                          : " says it uses the products, but no case of it did");
  for (const ops::OpDef* def : ops::all_ops())
    if (def->uses_products && def->domain != "com.kestrel" && !multiplied.count(def))
      wrong += "\n  " + def->name + " uses the products and has no parity case";
  EXPECT_EQ(wrong, "") << wrong;
}

TEST(BackendOps, VulkanFp32MatchesCpu) { run_precision("fp32"); }
TEST(BackendOps, VulkanFp16MatchesCpu) { run_precision("fp16"); }
// (In float16 runs on tensor cores the Conv cases run conv_coop.comp, which
// shares the tensor-core GEMMs' tile body; elsewhere conv_gemm.comp.)
// The GEMM comes in two tiles (scalar: gemm.comp, gemm_large.comp) and four
// on tensor cores, float16 runs only (gemm_coop_tiny.comp, gemm_coop_small.comp,
// gemm_coop_wide.comp, gemm_coop.comp), of which a GEMM takes one: the ops
// that record it run again on each, so all are checked on every device
// (lavapipe takes the small one by itself, and for the tiny one, which only
// tensor cores have, and the large one for the wide one). MatMulNBits of
// more than 4 rows runs each tile's _nbits variant (4-bit weights
// dequantized in the tile's load).
const std::vector<std::string> kGemmOps = {"MatMul", "Gemm", "MatMulNBits"};
TEST(BackendOps, VulkanFp32SmallGemmTilesMatchCpu) { run_precision("fp32", vulkan::GemmTiles::Small, kGemmOps); }
TEST(BackendOps, VulkanFp32LargeGemmTilesMatchCpu) { run_precision("fp32", vulkan::GemmTiles::Large, kGemmOps); }
TEST(BackendOps, VulkanFp16TinyGemmTilesMatchCpu) { run_precision("fp16", vulkan::GemmTiles::Tiny, kGemmOps); }
TEST(BackendOps, VulkanFp16SmallGemmTilesMatchCpu) { run_precision("fp16", vulkan::GemmTiles::Small, kGemmOps); }
TEST(BackendOps, VulkanFp16WideGemmTilesMatchCpu) { run_precision("fp16", vulkan::GemmTiles::Wide, kGemmOps); }
TEST(BackendOps, VulkanFp16LargeGemmTilesMatchCpu) { run_precision("fp16", vulkan::GemmTiles::Large, kGemmOps); }
// The int8 tensor-core product (gemm_integer_coop.comp) comes in two tiles,
// 64x64 and 128x128; the integer products run again on each where the
// device has them (elsewhere gemm_integer.comp runs both times).
const std::vector<std::string> kIntegerProductOps = {"MatMulInteger", "QLinearMatMul", "MatMulIntegerToFloat",
                                                     "DynamicQuantizeMatMul"};
TEST(BackendOps, VulkanSmallInt8TilesMatchCpu) {
  run_precision("fp32", vulkan::GemmTiles::Small, kIntegerProductOps);
}
TEST(BackendOps, VulkanLargeInt8TilesMatchCpu) {
  run_precision("fp32", vulkan::GemmTiles::Large, kIntegerProductOps);
}
// Packed int8 dot products (gemm_integer_dot.comp) where the device offers
// them (lavapipe does), and plain integer arithmetic (gemm_integer.comp),
// each forced; on a device with int8 tensor cores those take the products.
TEST(BackendOps, VulkanInt8DotProductsMatchCpu) {
  run_precision("fp32", vulkan::GemmTiles::Auto, kIntegerProductOps, vulkan::IntegerDot::On);
}
TEST(BackendOps, VulkanPlainIntegerProductsMatchCpu) {
  run_precision("fp32", vulkan::GemmTiles::Auto, kIntegerProductOps, vulkan::IntegerDot::Off);
}
TEST(BackendOps, EveryCaseHasALabel) {
  ASSERT_GT(all_cases().size(), 0u);
  for (const OpCase& c : all_cases()) EXPECT_FALSE(c.label.empty()) << c.op;
}

// Every kernel the Vulkan backend registers is checked against the CPU
// reference here, except the fused encoders: those are checked as whole
// encoders against ONNX Runtime (tests/families_test.cpp), since a one-node
// case cannot build their weights and claims.
TEST(BackendOps, EveryVulkanKernelHasAParityCase) {
  std::string missing;
  for (const vulkan::VkOpDef* def : vulkan::all_vk_ops()) {
    if (def->domain == "com.kestrel") continue;
    bool found = false;
    for (const OpCase& c : all_cases())
      found |= c.op == def->name && c.domain == def->domain && c.opset >= def->min_opset && c.opset <= def->max_opset;
    if (!found) missing += " " + (def->domain.empty() ? "" : def->domain + ".") + def->name;
  }
  EXPECT_EQ(missing, "") << "Vulkan kernels without a parity case:" << missing;
}

// One grep finds every implementation of an op: its Vulkan kernel lives in
// backends/vulkan/ops/<f>.cpp where the op itself is defined in <f>.cpp
// (src/ops/, or backends/cpu/ for the fused encoders).
// The same for the CPU backend's fast kernels: backends/cpu/<f>.cpp.
TEST(BackendOps, EveryFastCpuKernelFileIsNamedLikeItsOpFile) {
  auto base = [](const std::string& path) { return std::filesystem::path(path).filename().string(); };
  std::string wrong;
  for (const backends::cpu::FastKernel* k : backends::cpu::all_fast_kernels()) {
    const ops::OpDef* op = ops::find_op(k->domain, k->name, k->min_opset);
    if (!op || base(op->file) != base(k->file))
      wrong += "\n  " + k->name + ": " + base(k->file) + " (its op: " + (op ? base(op->file) : "none") + ")";
  }
  EXPECT_EQ(wrong, "") << "fast CPU kernels in a file named unlike their op's:" << wrong;
}

TEST(BackendOps, EveryVulkanKernelFileIsNamedLikeItsOpFile) {
  auto base = [](const std::string& path) { return std::filesystem::path(path).filename().string(); };
  std::string wrong;
  for (const vulkan::VkOpDef* def : vulkan::all_vk_ops()) {
    std::set<std::string> cpu_files;
    for (const ops::OpDef* op : ops::all_ops())
      if (op->name == def->name && op->domain == def->domain) cpu_files.insert(base(op->file));
    if (!cpu_files.count(base(def->file))) {
      wrong += "\n  " + def->name + ": " + base(def->file) + " (its op:";
      for (const std::string& f : cpu_files) wrong += " " + f;
      wrong += ")";
    }
  }
  EXPECT_EQ(wrong, "") << "Vulkan kernels in a file named unlike their op's:" << wrong;
}
