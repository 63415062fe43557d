#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <sstream>

#include "apps/cli.h"
#include "apps/input_files.h"
#include "core/npy.h"

namespace kestrel::cli {

bool Args::has(const std::string& s) const {
  for (const auto& w : switches)
    if (w == s) return true;
  return flags.count(s) != 0;
}

std::string Args::get(const std::string& flag, const std::string& def) const {
  auto it = flags.find(flag);
  return it == flags.end() ? def : it->second;
}

namespace {
// `v` read whole by `parse` (a std::sto* call that reports how much it
// read), or nothing when it does not read, or leaves a tail.
template <typename Parse>
auto read_whole(const std::string& v, Parse parse) -> std::optional<decltype(parse(v, nullptr))> {
  try {
    size_t used = 0;
    auto x = parse(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}
}  // namespace

int Args::get_int(const std::string& flag, int def) const {
  std::string v = get(flag, "");
  if (v.empty()) return def;
  if (auto n = read_whole(v, [](const std::string& s, size_t* used) { return std::stoi(s, used); })) return *n;
  fail(flag, " expects a whole number, got '", v, "'");
}

double Args::get_double(const std::string& flag, double def) const {
  std::string v = get(flag, "");
  if (v.empty()) return def;
  auto d = read_whole(v, [](const std::string& s, size_t* used) { return std::stod(s, used); });
  if (d && std::isfinite(*d)) return *d;
  fail(flag, " expects a number, got '", v, "'");
}

// Parsed by CLI11 (Debian's libcli11-dev): --flag VALUE and --flag=VALUE,
// repeated flags kept in order, switches, and positional arguments anywhere.
// Each command's --help is the CLI's own usage table (main.cpp), so CLI11's
// help flag is off; values are checked by the typed getters above, whose
// messages name the flag and the form it takes.
Args parse_args(int argc, char** argv, const std::vector<std::string>& value_flags,
                const std::vector<std::string>& switch_flags) {
  CLI::App app{"kestrel"};
  app.set_help_flag();
  Args a;
  app.add_option("arguments", a.positional);
  std::map<std::string, std::vector<std::string>> values;
  for (const std::string& f : value_flags) app.add_option(f, values[f])->allow_extra_args(false)->type_name("VALUE");
  std::map<std::string, int64_t> times;
  for (const std::string& f : switch_flags) app.add_flag(f, times[f]);
  std::vector<std::string> args(argv, argv + argc);
  std::reverse(args.begin(), args.end());  // (CLI11 takes them last first)
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    fail(e.what());
  }
  for (const auto& [flag, list] : values)
    for (const std::string& v : list) a.flags.emplace(flag, v);
  for (const auto& [flag, n] : times)
    if (n > 0) a.switches.push_back(flag);
  return a;
}

std::vector<std::string> with_session_flags(std::vector<std::string> own) {
  for (const char* f : {"--backend", "--precision", "--cpu-kernels", "--threads", "--max-loop-iterations", "--device",
                        "--trace", "--gemm-tiles", "--attention", "--attention-chunk", "--encoder-heads"})
    own.push_back(f);
  return own;
}

std::vector<std::string> with_session_switches(std::vector<std::string> own) {
  for (const char* f : {"--no-families", "--padding-free", "--no-replay", "--exact-buffers", "--no-tensor-cores"})
    own.push_back(f);
  return own;
}

SessionOptions session_options(const Args& a) {
  SessionOptions o;
  o.backend = parse_backend(a.get("--backend", "auto"));
  o.precision = parse_precision(a.get("--precision", "auto"));
  o.cpu_kernels = parse_cpu_kernels(a.get("--cpu-kernels", "fast"));
  o.threads = a.get_int("--threads", 0);
  KESTREL_CHECK(o.threads >= 0 && o.threads <= SessionOptions::kMaxThreads, "--threads must be 0 (all cores) to ",
                SessionOptions::kMaxThreads, ", got ", o.threads);
  o.max_loop_iterations = a.get_int("--max-loop-iterations", int(o.max_loop_iterations));
  KESTREL_CHECK(o.max_loop_iterations >= 0, "--max-loop-iterations must be 0 (no cap) or more");
  o.vulkan_device = a.get("--device", "");
  o.trace = a.get_int("--trace", 0);
  KESTREL_CHECK(o.trace >= 0 && o.trace <= 2, "--trace must be 0, 1 or 2, got ", o.trace);
  o.gemm_tiles = parse_gemm_tiles(a.get("--gemm-tiles", "auto"));
  o.attention_kernel = parse_attention_kernel(a.get("--attention", "auto"));
  o.attention_chunk = a.get_int("--attention-chunk", 0);
  KESTREL_CHECK(o.attention_chunk >= 0, "--attention-chunk must be 0 (automatic) or more, got ", o.attention_chunk);
  o.encoder_heads = a.get_int("--encoder-heads", 0);
  KESTREL_CHECK(o.encoder_heads >= 0, "--encoder-heads must be 0 or more, got ", o.encoder_heads);
  o.families = !a.has("--no-families");
  o.padding_free = a.has("--padding-free");
  o.replay = !a.has("--no-replay");
  o.exact_buffers = a.has("--exact-buffers");
  o.tensor_cores = !a.has("--no-tensor-cores");
  return o;
}

namespace {
// The NAME=VALUE pairs of a repeatable flag, each split at its first '=';
// `form` ("NAME=FILE.npy") says what the flag expects when one has none.
std::vector<std::pair<std::string, std::string>> named_values(const Args& a, const std::string& flag, const char* form) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto [it, end] = a.flags.equal_range(flag); it != end; ++it) {
    auto eq = it->second.find('=');
    KESTREL_CHECK(eq != std::string::npos, flag, " expects ", form, ", got '", it->second, "'");
    out.emplace_back(it->second.substr(0, eq), it->second.substr(eq + 1));
  }
  return out;
}

// A size of --dim SYMBOL=N or --shape NAME=D0,D1,... (`flag`, `form`; the
// flag's whole value is `flag_value`): a whole number from 0 to int64's
// largest, nothing else.
int64_t parse_dim(const std::string& v, const char* flag, const char* form, const std::string& flag_value) {
  bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
  int64_t n = 0;
  for (size_t i = 0; digits && i < v.size(); ++i)
    KESTREL_CHECK(mul_fits(n, 10, n) && add_fits(n, v[i] - '0', n), flag, " '", flag_value, "': ", v,
                  " is larger than int64 holds");
  KESTREL_CHECK(digits, flag, " expects ", form, " with each size a whole number 0 or more, got '", flag_value, "'");
  return n;
}

Tensor random_tensor(const TensorInfo& info, const Shape& shape, std::mt19937& rng) {
  DType dt = info.dtype == DType::Undefined ? DType::Float32 : info.dtype;
  Tensor t(dt, shape);
  int64_t n = t.numel();
  if (dtype_is_float(dt)) {
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    Tensor f(DType::Float32, shape);
    for (int64_t i = 0; i < n; ++i) f.data<float>()[i] = u(rng);
    return f.cast(dt);
  }
  if (dt == DType::Bool) {
    for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = rng() & 1;
    return t;
  }
  // An integer attention mask gets ones (no padding): random values are no
  // mask a model was made for, and Kestrel's fused text encoders refuse them.
  if (info.name.find("mask") != std::string::npos) {
    Tensor ones(DType::Int64, shape);
    for (int64_t i = 0; i < n; ++i) ones.data<int64_t>()[i] = 1;
    return ones.cast(dt);
  }
  // Integers: small non-negative values stay valid as indices and token ids.
  Tensor i64(DType::Int64, shape);
  for (int64_t i = 0; i < n; ++i) i64.data<int64_t>()[i] = int64_t(rng() % 10);
  return i64.cast(dt);
}
}  // namespace

std::map<std::string, Tensor> make_inputs(const Session& s, const Args& a, unsigned seed) {
  std::map<std::string, Tensor> in;
  for (auto it = a.flags.lower_bound("--inputs"); it != a.flags.upper_bound("--inputs"); ++it)
    for (auto& [name, t] : read_npz(it->second)) in[name] = std::move(t);
  for (const auto& [name, file] : named_values(a, "--input", "NAME=FILE.npy|FILE.pb")) in[name] = read_input_file(file);
  std::map<std::string, int64_t> dims;
  for (const auto& [symbol, n] : named_values(a, "--dim", "SYMBOL=N"))
    dims[symbol] = parse_dim(n, "--dim", "SYMBOL=N", symbol + "=" + n);
  // --shape NAME=D0,D1,...: a whole shape, for unnamed dims and for inputs of unknown rank.
  std::map<std::string, Shape> shapes;
  for (const auto& [name, list] : named_values(a, "--shape", "NAME=D0,D1,...")) {
    const std::string given = name + "=" + list;
    // C++17 lambdas cannot capture a structured binding (clang refuses it), hence the copy.
    const std::string& input = name;
    KESTREL_CHECK(std::any_of(s.inputs().begin(), s.inputs().end(), [&](const TensorInfo& t) { return t.name == input; }),
                  "--shape '", given, "': the model has no input '", name, "'");
    Shape& shape = shapes[name];
    std::stringstream sizes(list);
    for (std::string d; std::getline(sizes, d, ',');) shape.push_back(parse_dim(d, "--shape", "NAME=D0,D1,...", given));
  }
  std::mt19937 rng(seed);
  for (const auto& info : s.inputs()) {
    if (in.count(info.name)) continue;
    Shape shape;
    if (auto given = shapes.find(info.name); given != shapes.end()) {
      shape = given->second;
      if (info.shape) {
        KESTREL_CHECK(shape.size() == info.shape->size(), "--shape ", info.name, ": rank ", shape.size(), ", but the input is ",
                      info.shape_str());
        for (size_t k = 0; k < shape.size(); ++k)
          KESTREL_CHECK(!(*info.shape)[k].known() || (*info.shape)[k].value == shape[k], "--shape ", info.name,
                        ": dim ", k, " is ", shape[k], ", but the input is ", info.shape_str());
      }
    } else {
      KESTREL_CHECK(info.shape, "input '", info.name, "' has no known rank: give it with --input or --shape");
      for (size_t k = 0; k < info.shape->size(); ++k) {
        const ir::Dim& d = (*info.shape)[k];
        if (d.known()) shape.push_back(d.value);
        else if (!d.symbol.empty() && dims.count(d.symbol)) shape.push_back(dims[d.symbol]);
        else {
          // Said, not silent: a dim of 1 can make a later op fail far from its cause.
          shape.push_back(1);
          std::fprintf(stderr, "kestrel: input '%s' dim %zu (%s) set to 1; %s\n", info.name.c_str(), k,
                       d.symbol.empty() ? "unnamed" : ("'" + d.symbol + "'").c_str(),
                       d.symbol.empty() ? ("--shape " + info.name + "=... sets it").c_str()
                                        : ("--dim " + d.symbol + "=N or --shape sets it").c_str());
        }
      }
    }
    try {
      tensor_nbytes(info.dtype == DType::Undefined ? DType::Float32 : info.dtype, shape);
    } catch (const Error& e) {
      fail("input '", info.name, "' ", info.shape_str(), " with its --dim sizes: ", e.what());
    }
    in[info.name] = random_tensor(info, shape, rng);
  }
  return in;
}

std::string summarize(const Tensor& t) {
  std::ostringstream os;
  os << dtype_name(t.dtype()) << " " << shape_str(t.shape());
  if (t.numel() == 0) return os.str();
  std::vector<float> v = t.to_f32();
  double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
  size_t nonfinite = 0;
  for (float x : v) {
    if (!std::isfinite(x)) { ++nonfinite; continue; }
    mn = std::min<double>(mn, x);
    mx = std::max<double>(mx, x);
    sum += x;
    sq += double(x) * x;
  }
  size_t n = v.size() - nonfinite;
  if (n) {
    double mean = sum / double(n);
    os << " min " << mn << " max " << mx << " mean " << mean << " std " << std::sqrt(std::max(0.0, sq / double(n) - mean * mean));
  }
  if (nonfinite) os << " non-finite " << nonfinite;
  return os.str();
}

void progress(const std::string& what, int done, int total) {
  if (!isatty(2)) return;
  std::fprintf(stderr, "\r%s %d/%d%s", what.c_str(), done, total, done == total ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace kestrel::cli
