// The GEMM tile a Vulkan session asks for, and whether its integer products
// take dot products: enums of their own, without Vulkan's headers, so that
// the session's options can carry them.
#pragma once

namespace kestrel::vulkan {

// Which output tile the GEMM takes: 32x32 (on tensor cores only,
// gemm_coop_tiny.comp; the scalar kernel takes 64x64 for it), 64x64
// (gemm.comp; on tensor cores gemm_coop_small.comp), 128 rows x 96 columns
// (on tensor cores only, gemm_coop_wide.comp; the scalar kernel takes
// 128x128 for it) or 128x128 (gemm_large.comp; gemm_coop.comp). Auto: the larger on discrete GPUs and
// tensor cores, whose register files hold its larger blocks, for GEMMs of
// enough tiles to fill them, and on tensor cores the 32x32 one for products
// of too few 64x64 tiles (ops/gemm_record.cpp); 64x64 elsewhere (CPU devices,
// mobile and integrated GPUs). Tests force each on any device.
enum class GemmTiles { Auto, Tiny, Small, Wide, Large };

// Whether the integer products take packed int8 dot products
// (gemm_integer_dot.comp) on a device without int8 tensor cores: Auto where
// the driver reports them faster than the arithmetic spelled out
// (integerDotProduct4x8BitPackedSignedAccelerated), On wherever the device
// offers them (tests, on lavapipe, which emulates them), Off never
// (gemm_integer.comp).
enum class IntegerDot { Auto, On, Off };

}  // namespace kestrel::vulkan
