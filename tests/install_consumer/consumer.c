/* A program outside Kestrel's tree, built against an installed Kestrel
 * (install_test.sh): loads MODEL on the CPU, feeds 0.5 to its one input of
 * shape [1, 3, 36, 36] (the CLIP fixture's pixel_values) and prints the
 * version and each output's shape. */
#include <kestrel/kestrel.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer MODEL\n");
    return 2;
  }
  kestrel_options o = {"cpu", NULL, 1};
  kestrel_session* s = kestrel_session_load(argv[1], &o);
  if (!s) {
    fprintf(stderr, "load: %s\n", kestrel_last_error());
    return 1;
  }
  static float pixels[1 * 3 * 36 * 36];
  for (size_t i = 0; i < sizeof pixels / sizeof pixels[0]; ++i) pixels[i] = 0.5f;
  const int64_t shape[] = {1, 3, 36, 36};
  const kestrel_tensor in = {KESTREL_FLOAT32, 4, shape, pixels};
  const char* name = kestrel_session_input_name(s, 0);
  kestrel_outputs* out = kestrel_session_run(s, 1, &name, &in);
  if (!out) {
    fprintf(stderr, "run: %s\n", kestrel_last_error());
    kestrel_session_free(s);
    return 1;
  }
  printf("kestrel %s: %d outputs", kestrel_version(), kestrel_outputs_count(out));
  for (int32_t i = 0; i < kestrel_outputs_count(out); ++i) {
    kestrel_tensor t;
    kestrel_outputs_get(out, i, &t);
    printf(" [");
    for (int32_t d = 0; d < t.rank; ++d) printf(d ? ",%lld" : "%lld", (long long)t.shape[d]);
    printf("]");
  }
  printf("\n");
  kestrel_outputs_free(out);
  kestrel_session_free(s);
  return 0;
}
