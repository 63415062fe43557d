// ONNX Runtime's API tables as the plugin uses them, and the one way its
// errors cross the boundary. The plugin is compiled against the 1.29 headers
// (API version 29) and asks the runtime for the newest table both know: a
// runtime older than the headers has no table of version 29 and answers
// GetApi(29) with null, so the plugin steps down to the oldest version whose
// functions it calls (23, ONNX Runtime 1.23: the graph and plugin-EP API).
#pragma once
#include <onnxruntime_c_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kestrel::ort_ep {

// The version of every function the plugin calls: ONNX Runtime 1.23.
constexpr uint32_t kOldestApi = 23;

struct Api {
  const OrtApi* ort = nullptr;
  const OrtEpApi* ep = nullptr;
  uint32_t version = 0;  // of both tables, and what the plugin's structs report
  std::string runtime;   // the runtime's version string ("1.30.0")
};

// Negotiates once per process (CreateEpFactories). Throws std::runtime_error
// naming both versions when the runtime offers none the plugin can use.
const Api& init_api(const OrtApiBase* base);
const Api& api();

// An ONNX Runtime failure inside the plugin, carried as an exception to the
// callback's edge (status_of).
struct OrtFailure : std::runtime_error {
  OrtFailure(OrtErrorCode code, const std::string& what) : std::runtime_error(what), code(code) {}
  OrtErrorCode code;
};

// Throws OrtFailure with the status's message (and releases the status).
void check(OrtStatus* status, const char* what);

// What a callback returns for the exception it caught.
OrtStatus* status_of(const std::exception& e);
OrtStatus* status_of_unknown();

}  // namespace kestrel::ort_ep

// A callback's body: every exception becomes the OrtStatus it returns.
#define KESTREL_ORT_GUARD(...)                                   \
  try {                                                          \
    __VA_ARGS__                                                  \
  } catch (const std::exception& e) {                            \
    return ::kestrel::ort_ep::status_of(e);                      \
  } catch (...) {                                                \
    return ::kestrel::ort_ep::status_of_unknown();               \
  }                                                              \
  return nullptr;
