// Every JSON object the CLI prints, built with nlohmann::json in one place:
// the records of the layers below (devices, encoder claims, placements,
// tensors) become JSON here, at the edge, and nowhere deeper.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/vulkan/device.h"
#include "families/families.h"
#include "runtime/session.h"

namespace kestrel::cli {

using Json = nlohmann::ordered_json;  // keys in the order written

Json to_json(const vulkan::DeviceInfo& d);
Json to_json(const families::FamilyClaim& c);
Json to_json(const backends::PlacementReport& p);
// name, dtype and shape, the shape as a list of sizes and symbol names
// ("?" for an unnamed one), or null when its rank is unknown.
Json to_json(const TensorInfo& t);

// A vision command's object for one photo: image, width, height and, when
// one was written, annotated (the drawn copy's path); the command adds its results.
Json photo_json(const std::string& path, int width, int height, const std::string& annotated);

// One line of JSON. Bytes that are not UTF-8 (a producer string, a path)
// become U+FFFD rather than an exception.
std::string json_line(const Json& j);

}  // namespace kestrel::cli
