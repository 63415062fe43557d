// kestrel parity: runs a model on Kestrel and on ONNX Runtime (CPU) with the
// same inputs and reports how closely every output agrees. The exit status is
// 1 when the outputs differ in count or shape, or pass the bounds given
// (--tol on max_rel, --min-cosine), so scripts and CI can gate on it.
//
// A session's first runs are not what it runs later: a fused encoder's first
// run of a shape is checked on the CPU, a float16 session's first run
// calibrates, and from the fourth run at a shape recorded GPU work is
// replayed. So parity runs the model --runs times (4 by default: each of
// those once) and holds every run to the bounds, reporting per output the
// worst run.
#include <cstdio>
#include <vector>

#include "apps/cli.h"
#include "core/compare.h"
#include "runtime/ort_reference.h"

namespace kestrel::cli {

int cmd_parity(int argc, char** argv) {
  Args a = parse_args(argc, argv, with_session_flags({"--input", "--inputs", "--dim", "--shape", "--seed", "--tol", "--min-cosine", "--runs"}),
                      with_session_switches({}));
  KESTREL_CHECK(a.positional.size() == 1, "parity expects one MODEL argument");
  const double tol = a.get_double("--tol", -1), min_cosine = a.get_double("--min-cosine", -2);
  KESTREL_CHECK(!a.has("--tol") || tol >= 0, "--tol expects a bound on max_rel of 0 or more, got ", tol);
  KESTREL_CHECK(!a.has("--min-cosine") || (min_cosine >= -1 && min_cosine <= 1),
                "--min-cosine expects a cosine from -1 to 1, got ", min_cosine);
  const int runs = a.get_int("--runs", 4);
  KESTREL_CHECK(runs >= 1 && runs <= 1000, "--runs must be 1 to 1000, got ", runs);
  const std::string& path = a.positional[0];
  auto s = Session::load(path, session_options(a));
  auto inputs = make_inputs(*s, a, unsigned(a.get_int("--seed", 1234)));

  OrtResult ref = run_onnxruntime(find_ort_script(KESTREL_SOURCE_DIR), path, inputs, a.get_int("--threads", 0));
  std::vector<std::vector<Tensor>> all;
  for (int r = 0; r < runs; ++r) all.push_back(s->run(inputs));
  std::printf("%s: Kestrel (backend %s, %d threads, %d runs) vs ONNX Runtime CPU\n", path.c_str(),
              s->backend_name().c_str(), s->threads(), runs);
  std::printf("max_rel = max|kestrel - ort| / max|ort|: the worst error relative to the output's range; "
              "each output's worst run is shown\n");
  bool ok = true;
  for (const auto& ours : all)
    if (ours.size() != ref.outputs.size()) ok = false;
  if (!ok) std::printf("output count differs: Kestrel %zu, ONNX Runtime %zu\n", all[0].size(), ref.outputs.size());
  for (size_t i = 0; ok && i < ref.outputs.size(); ++i) {
    const Tensor& o = ref.outputs[i];
    std::printf("output %zu '%s': ", i, s->outputs()[i].name.c_str());
    // The least agreement over the runs, bound by bound (NaN sticks: it fails both).
    Agreement worst;
    bool same_shape = true;
    for (int r = 0; r < runs && same_shape; ++r) {
      const Tensor& k = all[size_t(r)][i];
      if (k.shape() != o.shape()) {
        std::printf("SHAPE DIFFERS in run %d: Kestrel %s, ONNX Runtime %s\n", r + 1, shape_str(k.shape()).c_str(),
                    shape_str(o.shape()).c_str());
        same_shape = false;
        break;
      }
      const Agreement g = agreement(k, o);
      if (r == 0 || !(g.cosine >= worst.cosine)) worst.cosine = g.cosine;
      if (r == 0 || !(g.max_rel <= worst.max_rel)) worst.max_rel = g.max_rel, worst.max_abs = g.max_abs;
    }
    if (!same_shape) {
      ok = false;
      continue;
    }
    const Tensor& k = all[0][i];
    std::string note = k.dtype() == o.dtype() ? "" : std::string("  (ONNX Runtime gives ") + dtype_name(o.dtype()) + ")";
    std::printf("%s %s  cosine %.9f  max_abs %.3g  max_rel %.3g%s\n", dtype_name(k.dtype()), shape_str(k.shape()).c_str(),
                worst.cosine, worst.max_abs, worst.max_rel, note.c_str());
    const Agreement& g = worst;
    // NaN fails both bounds (the comparisons are written so that it does).
    if (a.has("--tol") && !(g.max_rel <= tol)) {
      std::printf("  FAIL: max_rel %.3g is over --tol %.3g\n", g.max_rel, tol);
      ok = false;
    }
    if (a.has("--min-cosine") && !(g.cosine >= min_cosine)) {
      std::printf("  FAIL: cosine %.9f is under --min-cosine %.9f\n", g.cosine, min_cosine);
      ok = false;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace kestrel::cli
