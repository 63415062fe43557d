#include "apps/json_report.h"

namespace kestrel::cli {

Json to_json(const vulkan::DeviceInfo& d) {
  Json heaps = Json::array();
  for (const vulkan::MemoryHeap& h : d.heaps)
    heaps.push_back({{"size", h.size}, {"device_local", h.device_local}, {"host_visible", h.host_visible}});
  return {{"index", d.index},
          {"name", d.name},
          {"type", d.type},
          {"driver", d.driver_name},
          {"driver_info", d.driver_info},
          {"api_version", d.api_version},
          {"driver_version", d.driver_version},
          {"vendor_id", d.vendor_id},
          {"device_id", d.device_id},
          {"device_uuid", d.device_uuid},
          {"memory_heaps", heaps},
          {"unified_memory", d.unified_memory},
          {"subgroup_size", d.subgroup_size},
          {"subgroup_arithmetic", d.subgroup_arithmetic},
          {"shader_float16", d.shader_float16},
          {"shader_int8", d.shader_int8},
          {"storage_16bit", d.storage_16bit},
          {"storage_8bit", d.storage_8bit},
          {"integer_dot_product", d.integer_dot_product},
          {"integer_dot_product_accelerated", d.integer_dot_product_accelerated},
          {"compute_units", d.compute_units},
          {"cooperative_matrix_khr", d.cooperative_matrix_khr},
          {"cooperative_matrix_nv", d.cooperative_matrix_nv},
          {"coop_matrix_shapes", d.coop_matrix_shapes},
          {"coop_matrix_fp16_16x16x16", d.coop_matrix_fp16},
          {"coop_matrix_int8_16x16x32", d.coop_matrix_int8},
          {"compute_only_queue", d.has_compute_only_queue},
          {"limits",
           {{"max_workgroup_count", d.max_workgroup_count},
            {"max_workgroup_size", d.max_workgroup_size},
            {"max_workgroup_invocations", d.max_workgroup_invocations},
            {"max_shared_memory", d.max_shared_memory},
            {"max_storage_buffer_range", d.max_storage_buffer_range}}},
          {"score", d.score}};
}

Json to_json(const families::FamilyClaim& c) {
  return {{"family", c.family},
          {"node", c.node},
          {"layers", c.layers},
          {"width", c.width},
          {"heads", c.heads},
          {"head_dim", c.head_dim},
          {"mlp_width", c.mlp_width},
          {"activation", c.activation},
          {"pre_norm", c.pre_norm},
          {"layer_scale", c.layer_scale},
          {"class_token", c.class_token},
          {"registers", c.registers},
          {"taps", c.taps},
          {"attention", c.attention},
          {"after", c.after},
          {"replaced_nodes", c.replaced_nodes}};
}

Json to_json(const backends::PlacementReport& p) {
  return {{"device", p.device},
          {"ran", p.ran},  // false: the static partition, before any run (no FLOPs)
          {"gpu_nodes", p.gpu_nodes},
          {"cpu_nodes", p.cpu_nodes},
          {"gpu_flops_share", p.gpu_flops_share()},
          {"total_flops", p.total_flops},
          {"dispatches", p.dispatches},
          {"barriers", p.barriers},
          {"submits", p.submits},
          {"precision_note", p.precision_note},
          {"cpu_reasons", p.cpu_reasons}};
}

Json to_json(const TensorInfo& t) {
  Json shape = nullptr;
  if (t.shape) {
    shape = Json::array();
    for (const ir::Dim& d : *t.shape)
      shape.push_back(d.known() ? Json(d.value) : Json(d.symbol.empty() ? "?" : d.symbol));
  }
  return {{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", shape}};
}

}  // namespace kestrel::cli
