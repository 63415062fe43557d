// Times the SGEMM candidates for Kestrel's Conv/MatMul/Gemm on the shapes the
// real models produce (im2col GEMMs of 3x3 and 1x1 convolutions, transformer
// projections), at a given thread count:
//   OpenBLAS cblas_sgemm, oneDNN dnnl_sgemm, and a plain loop for scale.
// With --models DIR it also writes one MatMul model per shape (A an input, B
// an initializer) so bench/gemm_vs_ort.js can time ONNX Runtime's MatMul
// (its own MLAS GEMM) on the same shapes.
//   gemm_candidates [--threads N] [--json] [--models DIR]
#include <cblas.h>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {
struct Shape { int m, n, k; const char* what; };
const Shape kShapes[] = {
    {64, 25600, 576, "3x3 conv 64->64 @160x160"},
    {128, 6400, 1152, "3x3 conv 128->128 @80x80"},
    {256, 1600, 256, "1x1 conv 256->256 @40x40"},
    {16, 102400, 144, "3x3 conv 16->16 @320x320"},
    {197, 768, 768, "ViT-B projection, 197 tokens"},
    {1370, 384, 1536, "DINOv2-S MLP, 1370 tokens"},
};

void write_matmul_model(const std::string& path, const Shape& s, const std::vector<float>& b) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("matmul");
  auto* n = g->add_node();
  n->set_op_type("MatMul");
  n->add_input("A");
  n->add_input("B");
  n->add_output("C");
  auto* w = g->add_initializer();
  w->set_name("B");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(s.k);
  w->add_dims(s.n);
  w->set_raw_data(b.data(), b.size() * 4);
  auto io = [&](onnx::ValueInfoProto* v, const char* name, int r, int c) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(r);
    t->mutable_shape()->add_dim()->set_dim_value(c);
  };
  io(g->add_input(), "A", s.m, s.k);
  io(g->add_output(), "C", s.m, s.n);
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
}

template <typename F>
double median_ms(F&& f, int runs) {
  f();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  bool json = false;
  std::string models;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--json")) json = true;
    if (!std::strcmp(argv[i], "--models") && i + 1 < argc) models = argv[++i];
  }
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads);  // oneDNN's CPU runtime here is OpenMP
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  if (!json) std::printf("| shape (MxNxK) | what | OpenBLAS ms | oneDNN ms | GFLOP/s OpenBLAS | GFLOP/s oneDNN |\n|---|---|---:|---:|---:|---:|\n");
  for (const Shape& s : kShapes) {
    std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n), c(size_t(s.m) * s.n);
    for (auto& x : a) x = u(rng);
    for (auto& x : b) x = u(rng);
    if (!models.empty())
      write_matmul_model(models + "/matmul_" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                             std::to_string(s.k) + ".onnx", s, b);
    int runs = 10;
    double blas = median_ms([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.f, a.data(), s.k, b.data(), s.n, 0.f,
                  c.data(), s.n);
    }, runs);
    double dnnl = median_ms([&] {
      dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.f, a.data(), s.k, b.data(), s.n, 0.f, c.data(), s.n);
    }, runs);
    double gflop = 2.0 * s.m * s.n * s.k / 1e9;
    if (json)
      std::printf("%s\n", nlohmann::ordered_json{{"m", s.m}, {"n", s.n}, {"k", s.k}, {"what", s.what},
                                                {"openblas_ms", blas}, {"onednn_ms", dnnl}}.dump().c_str());
    else
      std::printf("| %dx%dx%d | %s | %.2f | %.2f | %.1f | %.1f |\n", s.m, s.n, s.k, s.what, blas, dnnl,
                  gflop / blas * 1e3, gflop / dnnl * 1e3);
  }
  return 0;
}
