// The weights of the quantized MatMuls' integer product (qgemm_product.h,
// qgemm_kernels.h) in the order it reads them, made once: at load where B and its zero point are initializers
// (qmatmul_weight_packing.h hands them to the node as two more inputs), else
// on each run.
//
// The product takes B [K, N] as s8 bytes w' = w - c (c = 128 for uint8
// weights, else 0), in panels of 16 columns: panel j holds columns
// 16j .. 16j + 15 as [K4][16][4], the four k of one quad of a column
// together; columns past N and k past K are zero.
#pragma once
#include <cstdint>
#include <vector>

namespace kestrel::backends::cpu {

struct QGemmPanels {
  std::vector<int8_t> panels;     // [ceil(N / 16)][K4][16][4]
  std::vector<int32_t> col_sums;  // [N]: sum over k of column n's w'
};

inline int64_t qgemm_k4(int64_t K) { return (K + 3) / 4; }

// w: B as stored, [K][N] (uint8 or int8 values); c: 128 for uint8, else 0.
template <typename W>
QGemmPanels pack_qgemm_panels(const W* w, int64_t K, int64_t N, int32_t c);

}  // namespace kestrel::backends::cpu
