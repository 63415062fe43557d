// The plugin library's entry points and its EP factory: one EP device per
// Vulkan device (on ONNX Runtime's hardware device with the same PCI vendor
// and device IDs; a Vulkan device that is a CPU implementation, such as
// lavapipe, on the CPU's) and one for Kestrel's CPU backend. ONNX Runtime
// hands the chosen device's metadata back when it creates the EP.
#include <onnxruntime_c_api.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "backends/vulkan/device.h"
#include "core/error.h"
#include "ort_ep/ep.h"
#include "ort_ep/ort_api.h"

namespace kestrel::ort_ep {

struct Factory : OrtEpFactory {
  Factory();
};

namespace {

constexpr const char* kEpName = "Kestrel";
constexpr const char* kBackendKey = "kestrel.backend";  // "vulkan" or "cpu"
constexpr const char* kDeviceKey = "kestrel.device";    // the Vulkan device's index
constexpr const char* kDeviceNameKey = "kestrel.device_name";
constexpr const char* kDeviceTypeKey = "kestrel.device_type";  // Vulkan's: "discrete", "integrated", "cpu" ...
// Provider options arrive in the session's options under this prefix
// (ONNX Runtime lower-cases the EP name).
constexpr const char* kOptionPrefix = "ep.kestrel.";

const OrtApi& ort() { return *api().ort; }

const char* ORT_API_CALL get_name(const OrtEpFactory*) noexcept { return kEpName; }
const char* ORT_API_CALL get_vendor(const OrtEpFactory*) noexcept { return "Kestrel"; }
uint32_t ORT_API_CALL get_vendor_id(const OrtEpFactory*) noexcept { return 0; }
const char* ORT_API_CALL get_version(const OrtEpFactory*) noexcept { return KESTREL_VERSION; }

// Creates one EP device; `pairs` become its metadata.
OrtEpDevice* make_device(OrtEpFactory* f, const OrtHardwareDevice* hw,
                         const std::vector<std::pair<std::string, std::string>>& pairs) {
  OrtKeyValuePairs* meta = nullptr;
  ort().CreateKeyValuePairs(&meta);
  for (const auto& [k, v] : pairs) ort().AddKeyValuePair(meta, k.c_str(), v.c_str());
  OrtEpDevice* device = nullptr;
  OrtStatus* s = api().ep->CreateEpDevice(f, hw, meta, nullptr, &device);
  ort().ReleaseKeyValuePairs(meta);
  check(s, "CreateEpDevice");
  return device;
}

OrtStatus* ORT_API_CALL get_supported_devices(OrtEpFactory* self, const OrtHardwareDevice* const* hw, size_t count,
                                              OrtEpDevice** out, size_t max_out, size_t* n_out) noexcept {
  *n_out = 0;
  KESTREL_ORT_GUARD(
      const OrtHardwareDevice* cpu = nullptr;
      for (size_t i = 0; i < count; ++i)
        if (ort().HardwareDevice_Type(hw[i]) == OrtHardwareDeviceType_CPU && !cpu) cpu = hw[i];
      std::vector<vulkan::DeviceInfo> vk;
      try {
        vk = vulkan::enumerate_devices();
      } catch (const std::exception&) {
        // No Vulkan driver: the CPU device alone.
      }
      // Best device first, as Kestrel itself would pick.
      std::stable_sort(vk.begin(), vk.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
      // Several GPUs of one model (eight H200s) share their IDs: each Vulkan
      // device takes the next hardware device with its IDs not yet taken.
      // The order is the order of preference: ONNX Runtime's selection
      // policies take the first Kestrel device on the hardware they choose,
      // so Kestrel's CPU backend comes before a Vulkan device that is itself
      // a CPU implementation (lavapipe, far slower than either CPU EP).
      std::vector<bool> taken(count, false);
      std::vector<const vulkan::DeviceInfo*> on_cpu;
      auto add = [&](const OrtHardwareDevice* h, std::vector<std::pair<std::string, std::string>> meta) {
        if (*n_out < max_out) out[(*n_out)++] = make_device(self, h, meta);
      };
      auto vulkan_meta = [](const vulkan::DeviceInfo& d) {
        return std::vector<std::pair<std::string, std::string>>{{kBackendKey, "vulkan"}, {kDeviceKey, std::to_string(d.index)},
                                                                {kDeviceNameKey, d.name}, {kDeviceTypeKey, d.type}};
      };
      for (const vulkan::DeviceInfo& d : vk) {
        const OrtHardwareDevice* match = nullptr;
        for (size_t i = 0; i < count && !match; ++i)
          if (!taken[i] && ort().HardwareDevice_Type(hw[i]) == OrtHardwareDeviceType_GPU &&
              ort().HardwareDevice_VendorId(hw[i]) == d.vendor_id && ort().HardwareDevice_DeviceId(hw[i]) == d.device_id) {
            match = hw[i];
            taken[i] = true;
          }
        if (match) add(match, vulkan_meta(d));
        else if (d.type == "cpu") on_cpu.push_back(&d);
      }
      if (cpu) add(cpu, {{kBackendKey, "cpu"}});
      if (cpu)
        for (const vulkan::DeviceInfo* d : on_cpu) add(cpu, vulkan_meta(*d));)
}

std::optional<std::string> option(const OrtSessionOptions* so, const std::string& key) {
  const std::string full = kOptionPrefix + key;
  int has = 0;
  check(ort().HasSessionConfigEntry(so, full.c_str(), &has), "HasSessionConfigEntry");
  if (!has) return std::nullopt;
  size_t size = 0;
  check(ort().GetSessionConfigEntry(so, full.c_str(), nullptr, &size), "GetSessionConfigEntry");
  std::string value(size, '\0');
  check(ort().GetSessionConfigEntry(so, full.c_str(), value.data(), &size), "GetSessionConfigEntry");
  if (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

OrtStatus* ORT_API_CALL create_ep(OrtEpFactory*, const OrtHardwareDevice* const*, const OrtKeyValuePairs* const* meta,
                                  size_t count, const OrtSessionOptions* so, const OrtLogger* logger,
                                  OrtEp** ep) noexcept {
  *ep = nullptr;
  KESTREL_ORT_GUARD(
      if (count == 0) fail_as(ErrorKind::InvalidArgument, "no device was selected");
      // ONNX Runtime's selection policies hand over every Kestrel device on
      // the hardware they chose: a GPU's Vulkan device first, then Kestrel's
      // CPU backend, and a Vulkan device that is itself a CPU implementation
      // (lavapipe, far slower than either CPU EP) only when chosen alone.
      auto rank = [&](size_t i) {
        const char* b = ort().GetKeyValue(meta[i], kBackendKey);
        const char* t = ort().GetKeyValue(meta[i], kDeviceTypeKey);
        if (!b || std::string(b) != "vulkan") return 1;
        return t && std::string(t) == "cpu" ? 0 : 2;
      };
      size_t pick = 0;
      for (size_t i = 1; i < count; ++i)
        if (rank(i) > rank(pick)) pick = i;
      EpConfig config;
      const char* backend = ort().GetKeyValue(meta[pick], kBackendKey);
      const bool vulkan = backend && std::string(backend) == "vulkan";
      config.session.backend = vulkan ? BackendChoice::Vulkan : BackendChoice::Cpu;
      if (vulkan)
        if (const char* d = ort().GetKeyValue(meta[pick], kDeviceKey)) config.session.vulkan_device = d;
      with_kind(ErrorKind::InvalidArgument, [&] {
        if (auto p = option(so, "precision")) config.session.precision = parse_precision(*p);
        if (auto d = option(so, "device")) config.session.vulkan_device = *d;
        if (auto t = option(so, "threads")) {
          size_t used = 0;
          int n = -1;
          try {
            n = std::stoi(*t, &used);
          } catch (const std::exception&) {
          }
          if (used != t->size() || n < 0) fail("provider option threads='", *t, "' is not a count of threads (0: all)");
          config.session.threads = n;
        }
        return 0;
      });
      *ep = new KestrelEp(kEpName, std::move(config), logger);)
}

void ORT_API_CALL release_ep(OrtEpFactory*, OrtEp* ep) noexcept { delete static_cast<KestrelEp*>(ep); }

// Kestrel reads and writes host memory: ONNX Runtime's CPU allocator serves
// every input and output, and no data transfer or stream is needed.
OrtStatus* ORT_API_CALL create_allocator(OrtEpFactory*, const OrtMemoryInfo*, const OrtKeyValuePairs*,
                                         OrtAllocator** allocator) noexcept {
  *allocator = nullptr;
  return nullptr;
}
void ORT_API_CALL release_allocator(OrtEpFactory*, OrtAllocator*) noexcept {}
OrtStatus* ORT_API_CALL create_data_transfer(OrtEpFactory*, OrtDataTransferImpl** transfer) noexcept {
  *transfer = nullptr;
  return nullptr;
}
bool ORT_API_CALL is_stream_aware(const OrtEpFactory*) noexcept { return false; }
OrtStatus* ORT_API_CALL create_stream(OrtEpFactory*, const OrtMemoryDevice*, const OrtKeyValuePairs*,
                                      OrtSyncStreamImpl** stream) noexcept {
  *stream = nullptr;
  return nullptr;
}

// Kestrel writes no compiled models (EPContext nodes): nothing to validate.
OrtStatus* ORT_API_CALL validate_compiled(OrtEpFactory*, const OrtHardwareDevice* const*, size_t, const char*,
                                          OrtCompiledModelCompatibility* verdict) noexcept {
  *verdict = OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
  return nullptr;
}

}  // namespace

Factory::Factory() : OrtEpFactory{} {
  ort_version_supported = kOldestApi;  // the members below are ONNX Runtime 1.23's
  GetName = get_name;
  GetVendor = get_vendor;
  GetSupportedDevices = get_supported_devices;
  CreateEp = create_ep;
  ReleaseEp = release_ep;
  GetVendorId = get_vendor_id;
  GetVersion = get_version;
  CreateAllocator = create_allocator;
  ReleaseAllocator = release_allocator;
  CreateDataTransfer = create_data_transfer;
  IsStreamAware = is_stream_aware;
  CreateSyncStreamForDevice = create_stream;
  ValidateCompiledModelCompatibilityInfo = validate_compiled;
}

}  // namespace kestrel::ort_ep

extern "C" {

__attribute__((visibility("default"))) OrtStatus* CreateEpFactories(const char*, const OrtApiBase* base,
                                                                    const OrtLogger*, OrtEpFactory** factories,
                                                                    size_t max_factories, size_t* num_factories) {
  using namespace kestrel::ort_ep;
  *num_factories = 0;
  try {
    init_api(base);
  } catch (const std::exception& e) {
    // Version 1's table, which every runtime has, can still say why.
    const OrtApi* any = base ? base->GetApi(1) : nullptr;
    return any ? any->CreateStatus(ORT_FAIL, e.what()) : nullptr;
  }
  KESTREL_ORT_GUARD(
      if (max_factories < 1) return api().ort->CreateStatus(ORT_INVALID_ARGUMENT, "Kestrel: no room for a factory");
      factories[0] = new Factory();
      *num_factories = 1;)
}

__attribute__((visibility("default"))) OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) {
  delete static_cast<kestrel::ort_ep::Factory*>(factory);
  return nullptr;
}

}  // extern "C"
