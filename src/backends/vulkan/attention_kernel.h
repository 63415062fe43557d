// How a Vulkan session computes the fused encoders' attention: an enum of
// its own, without Vulkan's headers, so that SessionOptions can carry it.
#pragma once

namespace kestrel::vulkan {

// Flash: one pass per (sequence, head, tile of queries) with an online
// softmax, the scores never in memory (flash_attention.comp; on tensor
// cores flash_attention_coop.comp). Chunked: the scores of a chunk of
// queries as a batched GEMM into memory, a Softmax over them, the context
// as a second GEMM (ops/encoder_steps.h). Auto: flash on tensor cores
// (float16 runs, head dims its kernel takes), where it was measured faster,
// chunked elsewhere. Tests force each on any device.
enum class AttentionKernel { Auto, Flash, Chunked };

}  // namespace kestrel::vulkan
