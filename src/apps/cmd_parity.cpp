// kestrel parity: placeholder until the ONNX Runtime reference script lands.
#include "apps/cli.h"

namespace kestrel::cli {
int cmd_parity(int argc, char** argv) { fail("parity is not built yet"); }
}  // namespace kestrel::cli
