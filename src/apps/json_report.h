// Every JSON object the CLI prints, built with nlohmann::json in one place:
// the records of the layers below (devices, encoder claims, placements,
// tensors) become JSON here, at the edge, and nowhere deeper.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/vulkan/device.h"
#include "api/vision_json.h"
#include "families/families.h"
#include "runtime/session.h"

namespace kestrel::cli {

using Json = api_json::Json;  // nlohmann::ordered_json: keys in the order written

Json to_json(const vulkan::DeviceInfo& d);
Json to_json(const families::FamilyClaim& c);
Json to_json(const backends::PlacementReport& p);
// name, dtype and shape, the shape as a list of sizes and symbol names
// ("?" for an unnamed one), or null when its rank is unknown.
Json to_json(const TensorInfo& t);

// One line of JSON, non-UTF-8 bytes (a producer string, a path) as U+FFFD.
using api_json::json_line;

}  // namespace kestrel::cli
