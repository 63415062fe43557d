// One layer of torch's nn.TransformerEncoderLayer(norm_first=True) as its
// exporters write nn.MultiheadAttention (the fast path off):
//
//   x -> LayerNorm -> [Transpose to sequence-first] -> in_proj (one [D, 3D]
//     projection) -> q, k, v per head -> scaled scores [+ key padding mask]
//     -> Softmax -> context -> out_proj (Gemm or MatMul) -> [back to
//     batch-first] -> + x = h
//   h -> LayerNorm -> linear1 -> activation -> linear2 -> + h
//
// Found by topology like the other walks; the attention is the region the
// in_proj output feeds on the way to out_proj. The key padding mask is read
// as the graph input it is built from (Where(input == 0, -inf, 0), reshaped
// per head). The fused node's first-run check confirms the reading.
#pragma once
#include <optional>
#include <string>

#include "families/encoder_layer.h"

namespace kestrel::families {

std::optional<EncoderLayer> match_torch_layer(const GraphIndex& gi, int x, std::string& why);

}  // namespace kestrel::families
