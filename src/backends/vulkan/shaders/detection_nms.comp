#version 450
#extension GL_GOOGLE_include_directive : require
// com.kestrel DetectionBoxes, its second step (ops/detection_boxes.cpp's
// nms_per_class is the oracle): one workgroup per photo takes the best
// remaining candidate (highest score; on a tie, the earlier row, as the
// CPU's stable sort does), writes it out, and removes every candidate of its
// class that overlaps it by more than the IoU threshold; until none remains
// or max_out are kept. Each round keeps one box, so the rounds are the
// boxes kept, not the candidates. Then the rows past them are zeroed.
// Greedy NMS in score order keeps exactly the boxes this does.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Th_ { float th[]; };  // the IoU threshold (the node is float32)
layout(std430, binding = 1) coherent buffer S_ { uint s[]; };    // detection_decode.comp's scratch
layout(std430, binding = 2) writeonly buffer O_ { float o[]; };  // [B, max_out, cols]
layout(std430, binding = 3) writeonly buffer N_ { int count[]; };
layout(push_constant) uniform Push {
  uint total, rec, batch, max_out, cols, keypoints;
} pc;

shared float best_score[256];
shared uint best_row[256], best_at[256];

const float REMOVED = -1.0;  // scores are at least the score threshold, so never negative

// ops::iou, each step rounded as the CPU rounds it (no fused multiply-adds).
float box_iou(vec4 a, vec4 b) {
  precise float iw = min(a.z, b.z) - max(a.x, b.x);
  precise float ih = min(a.w, b.w) - max(a.y, b.y);
  if (iw <= 0.0 || ih <= 0.0) return 0.0;
  precise float inter = iw * ih;
  precise float area_a = (a.z - a.x) * (a.w - a.y);
  precise float area_b = (b.z - b.x) * (b.w - b.y);
  precise float uni = area_a + area_b - inter;
  return uni > 0.0 ? inter / uni : 0.0;
}

vec4 box_at(uint at) {
  return vec4(uintBitsToFloat(s[at + 2]), uintBitsToFloat(s[at + 3]), uintBitsToFloat(s[at + 4]),
              uintBitsToFloat(s[at + 5]));
}

bool better(float sa, uint ra, float sb, uint rb) { return sa > sb || (sa == sb && ra < rb); }

void main() {
  uint b = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  uint n = min(s[b], pc.total);
  uint first = pc.batch + b * pc.total * pc.rec;
  float iou_threshold = th[0];
  uint out0 = b * pc.max_out * pc.cols;
  uint kept = 0u;
  while (kept < pc.max_out) {
    float bs = REMOVED;
    uint br = 0xffffffffu, ba = 0u;
    for (uint j = t; j < n; j += 256u) {
      uint at = first + j * pc.rec;
      float sc = uintBitsToFloat(s[at]);
      uint row = s[at + pc.rec - 1u];
      if (sc != REMOVED && better(sc, row, bs, br)) {
        bs = sc;
        br = row;
        ba = at;
      }
    }
    best_score[t] = bs;
    best_row[t] = br;
    best_at[t] = ba;
    barrier();
    for (uint half_ = 128u; half_ > 0u; half_ >>= 1u) {
      if (t < half_ && better(best_score[t + half_], best_row[t + half_], best_score[t], best_row[t])) {
        best_score[t] = best_score[t + half_];
        best_row[t] = best_row[t + half_];
        best_at[t] = best_at[t + half_];
      }
      barrier();
    }
    float win_score = best_score[0];
    uint win = best_at[0];
    barrier();  // everyone has read the winner before the next round writes
    if (win_score == REMOVED) break;
    vec4 wb = box_at(win);
    uint wc = s[win + 1u];
    // The record's keypoints sit at the output's columns 6...; its score,
    // class and box go to columns 4, 5 and 0-3.
    for (uint c = 6u + t; c < pc.cols; c += 256u) o[out0 + kept * pc.cols + c] = uintBitsToFloat(s[win + c]);
    if (t == 0u) {
      o[out0 + kept * pc.cols + 0u] = uintBitsToFloat(s[win + 2u]);
      o[out0 + kept * pc.cols + 1u] = uintBitsToFloat(s[win + 3u]);
      o[out0 + kept * pc.cols + 2u] = uintBitsToFloat(s[win + 4u]);
      o[out0 + kept * pc.cols + 3u] = uintBitsToFloat(s[win + 5u]);
      // The score from the round's winner, not from the record: the loop
      // below marks the record removed, maybe while this thread reads it.
      o[out0 + kept * pc.cols + 4u] = win_score;
      o[out0 + kept * pc.cols + 5u] = uintBitsToFloat(s[win + 1u]);
    }
    for (uint j = t; j < n; j += 256u) {
      uint at = first + j * pc.rec;
      if (at == win || (uintBitsToFloat(s[at]) != REMOVED && s[at + 1u] == wc && box_iou(wb, box_at(at)) > iou_threshold))
        s[at] = floatBitsToUint(REMOVED);
    }
    memoryBarrierBuffer();
    barrier();
    ++kept;
  }
  for (uint e = kept * pc.cols + t; e < pc.max_out * pc.cols; e += 256u) o[out0 + e] = 0.0;
  if (t == 0u) count[b] = int(kept);
}
