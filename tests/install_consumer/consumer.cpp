// consumer.c's program written against the installed C++ API (kestrel.hpp),
// which reaches the library through its C ABI only: same input, same output line.
#include <kestrel/kestrel.hpp>

#include <cstdio>
#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer_cpp MODEL\n";
    return 2;
  }
  try {
    kestrel::api::Session s(argv[1], kestrel::api::Options().backend("cpu").threads(1));
    std::vector<float> pixels(1 * 3 * 36 * 36, 0.5f);
    const std::vector<int64_t> shape{1, 3, 36, 36};
    kestrel::api::Outputs out = s.run({s.inputs().at(0).name}, {kestrel::api::view(pixels.data(), shape)});
    std::cout << "kestrel " << kestrel::api::version() << ": " << out.size() << " outputs";
    for (size_t i = 0; i < out.size(); ++i) {
      const kestrel_tensor t = out[i];
      std::cout << " [";
      for (int32_t d = 0; d < t.rank; ++d) std::cout << (d ? "," : "") << t.shape[d];
      std::cout << "]";
    }
    std::cout << "\n";
  } catch (const kestrel::api::Error& e) {
    std::cerr << "error " << e.code() << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
