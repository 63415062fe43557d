// libFuzzer target for the C API's tensor intake (kestrel_tensor_nbytes and
// the inputs of kestrel_session_run), on a model x -> Identity -> y whose
// input has no declared shape. The input bytes are decoded as
//   int32 dtype, int32 rank, then up to min(rank, 64) int64 dims, then data.
// A rank past 64 is passed as is over a shape array of at most 64 dims, and
// the data sits in a buffer of exactly its size: reading past either is a
// finding (AddressSanitizer). Kestrel must refuse what kestrel_tensor_nbytes
// refuses, and a run it accepts must give back the data unchanged.
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "api/kestrel.h"

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "%s (last error: %s)\n", what, kestrel_last_error());
  std::abort();
}

kestrel_session* identity_session() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  std::string path = "/tmp/kestrel_c_api_tensor_fuzz_" + std::to_string(getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  kestrel_options opts = {"cpu", nullptr, 1};
  kestrel_session* s = kestrel_session_load(path.c_str(), &opts);
  std::remove(path.c_str());
  if (!s) finding("the fuzzer's own model did not load");
  return s;
}

template <typename T>
T take(const uint8_t*& p, size_t& left) {
  T v{};
  size_t n = std::min(sizeof v, left);
  std::memcpy(&v, p, n);
  p += n;
  left -= n;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  static kestrel_session* session = identity_session();
  const uint8_t* p = bytes;
  size_t left = size;
  kestrel_tensor t{};
  t.dtype = take<int32_t>(p, left);
  t.rank = take<int32_t>(p, left);
  std::vector<int64_t> shape(size_t(std::clamp<int32_t>(t.rank, 0, 64)), 1);
  for (int64_t& d : shape)
    if (left) d = take<int64_t>(p, left);
  std::vector<uint8_t> data(p, p + left);  // exactly the data given
  t.shape = shape.data();
  t.data = data.data();

  const int64_t need = kestrel_tensor_nbytes(&t);
  if (need >= 0 && uint64_t(need) > data.size()) return 0;  // a caller's buffer must hold what the tensor needs
  const char* names[] = {"x"};
  kestrel_outputs* out = kestrel_session_run(session, 1, names, &t);
  if (need < 0) {
    if (out) finding("a tensor kestrel_tensor_nbytes refuses was run");
    return 0;
  }
  if (!out) return 0;  // refused at run (another dtype than the model's float)
  kestrel_tensor y{};
  if (kestrel_outputs_get(out, 0, &y) != 0) finding("no output 0");
  if (y.rank != t.rank || !std::equal(y.shape, y.shape + y.rank, t.shape)) finding("the output's shape is not the input's");
  if (need > 0 && std::memcmp(y.data, t.data, size_t(need)) != 0) finding("the output's data is not the input's");
  kestrel_outputs_free(out);
  return 0;
}
