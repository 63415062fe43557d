// The execution provider ONNX Runtime creates per session: it claims the
// parts of a graph Kestrel runs well and compiles each into a Kestrel
// session.
#pragma once
#include <onnxruntime_c_api.h>

#include <string>

#include "runtime/session_options.h"

namespace kestrel::ort_ep {

struct EpConfig {
  SessionOptions session;  // backend (Vulkan or the CPU's), device, precision, threads
};

struct KestrelEp : OrtEp {
  KestrelEp(std::string name, EpConfig config, const OrtLogger* logger);

  std::string name;
  EpConfig config;
  const OrtLogger* logger;  // the session's, for the EP's lifetime

  void log(OrtLoggingLevel level, const std::string& message) const;
};

}  // namespace kestrel::ort_ep
