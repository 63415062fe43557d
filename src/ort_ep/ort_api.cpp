#include "ort_ep/ort_api.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace kestrel::ort_ep {
namespace {
Api g_api;

OrtErrorCode code_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return ORT_INVALID_ARGUMENT;
    case ErrorKind::NoSuchFile: return ORT_NO_SUCHFILE;
    case ErrorKind::InvalidModel: return ORT_INVALID_GRAPH;
    case ErrorKind::NotImplemented: return ORT_NOT_IMPLEMENTED;
    default: return ORT_EP_FAIL;
  }
}
}  // namespace

const Api& init_api(const OrtApiBase* base) {
  if (g_api.ort) return g_api;
  if (!base) throw std::runtime_error("Kestrel: ONNX Runtime passed no OrtApiBase");
  g_api.runtime = base->GetVersionString ? base->GetVersionString() : "unknown";
  // ONNX Runtime 1.N serves API versions up to N and logs an error for each
  // newer one asked: start from the runtime's own version where it parses.
  uint32_t newest = ORT_API_VERSION;
  unsigned major = 0, minor = 0;
  if (std::sscanf(g_api.runtime.c_str(), "%u.%u", &major, &minor) == 2 && major == 1 && minor >= kOldestApi)
    newest = std::min<uint32_t>(newest, minor);
  for (uint32_t v = newest; v >= kOldestApi; --v) {
    if (const OrtApi* api = base->GetApi(v)) {
      g_api.ort = api;
      g_api.version = v;
      break;
    }
  }
  if (!g_api.ort)
    throw std::runtime_error("Kestrel's plugin needs ONNX Runtime 1." + std::to_string(kOldestApi) +
                             " or newer (API version " + std::to_string(kOldestApi) + " to " +
                             std::to_string(ORT_API_VERSION) + "); this runtime is " + g_api.runtime);
  g_api.ep = g_api.ort->GetEpApi();
  if (!g_api.ep) throw std::runtime_error("ONNX Runtime " + g_api.runtime + " offers no plugin-EP API");
  return g_api;
}

const Api& api() { return g_api; }

void check(OrtStatus* status, const char* what) {
  if (!status) return;
  const OrtApi& ort = *g_api.ort;
  const OrtErrorCode code = ort.GetErrorCode(status);
  std::string message = std::string(what) + ": " + ort.GetErrorMessage(status);
  ort.ReleaseStatus(status);
  throw OrtFailure(code, message);
}

OrtStatus* status_of(const std::exception& e) {
  OrtErrorCode code = ORT_EP_FAIL;
  if (auto* f = dynamic_cast<const OrtFailure*>(&e)) code = f->code;
  if (auto* k = dynamic_cast<const Error*>(&e)) code = code_of(k->kind());
  return g_api.ort->CreateStatus(code, (std::string("Kestrel: ") + e.what()).c_str());
}

OrtStatus* status_of_unknown() { return g_api.ort->CreateStatus(ORT_EP_FAIL, "Kestrel: unknown failure"); }

}  // namespace kestrel::ort_ep
