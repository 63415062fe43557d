#version 450
#extension GL_GOOGLE_include_directive : require
// com.kestrel DetectionBoxes, its first step (ops/detection_boxes.cpp is the
// oracle): one invocation per row of one part of a detector head's outputs
// (a YOLO table, one stride of a face head, one BlazeFace grid) decodes the
// row as the CPU does and, where its score reaches the threshold, appends
// the box to its photo's candidates. STEP 0 first zeroes the photos' counts.
//
// Scratch (s): the B photos' candidate counts, then per photo `total`
// records of REC words: score, class, x1, y1, x2, y2, the keypoints' x and
// y, and the row in the head's order (the CPU's decode order: NMS breaks
// score ties by it). Candidates land in any order; NMS orders them.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int STEP = 1;  // 0: zero the counts; 1: decode
layout(constant_id = 1) const int HEAD = 1;  // ops::DetectorArch
const int YOLOV8 = 1, YOLOX = 2, YOLOV5 = 3, SCRFD = 4, YUNET = 5, ULTRAFACE = 6, BLAZEFACE = 7;
layout(std430, binding = 0) readonly buffer A_ { T a[]; };   // scores, or the YOLO table
layout(std430, binding = 1) readonly buffer O_ { T ob[]; };  // YuNet's objectness
layout(std430, binding = 2) readonly buffer B_ { T bx[]; };  // boxes
layout(std430, binding = 3) readonly buffer K_ { T kp[]; };  // SCRFD's and YuNet's keypoints
layout(std430, binding = 4) readonly buffer Th_ { float th[]; };  // the score threshold (the node is float32)
layout(std430, binding = 5) buffer S_ { uint s[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH
  uint rows, row0, total, rec, batch;
  uint per_a, per_o, per_b, per_k;  // elements per photo of bindings 0-3
  int classes, stride, cols, anchors, cells, keypoints, box_width;
  float width, height;
} pc;

float score_at(uint i) { return LD(a[i]); }

void emit(uint b, uint row, float score, int cls, vec4 box, vec2 kps[6]) {
  uint slot = atomicAdd(s[b], 1u);
  if (slot >= pc.total) return;  // cannot happen: a photo has `total` rows
  uint at = pc.batch + (b * pc.total + slot) * pc.rec;
  s[at] = floatBitsToUint(score);
  s[at + 1] = floatBitsToUint(float(cls));
  s[at + 2] = floatBitsToUint(box.x);
  s[at + 3] = floatBitsToUint(box.y);
  s[at + 4] = floatBitsToUint(box.z);
  s[at + 5] = floatBitsToUint(box.w);
  for (int k = 0; k < pc.keypoints; ++k) {
    s[at + 6 + 2 * k] = floatBitsToUint(kps[k].x);
    s[at + 7 + 2 * k] = floatBitsToUint(kps[k].y);
  }
  s[at + pc.rec - 1] = pc.row0 + row;
}

vec4 center_box(float cx, float cy, float w, float h) { return vec4(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2); }

void main() {
  uint e = pc.base + kestrel_index();
  if (e >= pc.n) return;
  if (STEP == 0) {
    s[e] = 0u;
    return;
  }
  uint b = e / pc.rows, i = e % pc.rows;
  float conf = th[0];
  vec2 kps[6];
  if (HEAD == YOLOV8) {  // [B, 4 + C, N]: rows are columns
    uint N = pc.rows, at = b * pc.per_a + i;
    int best = 0;
    float top = score_at(at + 4 * N);
    for (int c = 1; c < pc.classes; ++c) {
      float v = score_at(at + uint(4 + c) * N);
      if (v > top) {
        top = v;
        best = c;
      }
    }
    if (top < conf) return;
    emit(b, i, top, best, center_box(score_at(at), score_at(at + N), score_at(at + 2 * N), score_at(at + 3 * N)), kps);
  } else if (HEAD == YOLOX || HEAD == YOLOV5) {  // [B, N, 5 + C]
    uint W = uint(5 + pc.classes), at = b * pc.per_a + i * W;
    int best = 0;
    float top = score_at(at + 5);
    for (int c = 1; c < pc.classes; ++c) {
      float v = score_at(at + 5 + uint(c));
      if (v > top) {
        top = v;
        best = c;
      }
    }
    float score = score_at(at + 4) * top;
    if (score < conf) return;
    vec4 r = vec4(score_at(at), score_at(at + 1), score_at(at + 2), score_at(at + 3));
    if (HEAD == YOLOV5) {
      emit(b, i, score, best, center_box(r.x, r.y, r.z, r.w), kps);
      return;
    }
    // YOLOX: the grid cells of stride 8, then 16, then 32, row by row.
    uint cell = i, st = 8u;
    for (; st < 32u; st *= 2u) {
      uint here = (uint(pc.height) / st) * (uint(pc.width) / st);
      if (cell < here) break;
      cell -= here;
    }
    uint gcols = uint(pc.width) / st;
    float gx = float(cell % gcols), gy = float(cell / gcols), sf = float(st);
    emit(b, i, score, best, center_box((r.x + gx) * sf, (r.y + gy) * sf, exp(r.z) * sf, exp(r.w) * sf), kps);
  } else if (HEAD == SCRFD || HEAD == YUNET) {  // one stride: rows are cells x anchors
    uint cell = i / uint(pc.anchors);
    float gx = float(cell % uint(pc.cols)), gy = float(cell / uint(pc.cols)), sf = float(pc.stride);
    float score = LD(a[b * pc.per_a + i]);
    if (HEAD == YUNET) score = sqrt(clamp(score, 0.0, 1.0) * clamp(LD(ob[b * pc.per_o + i]), 0.0, 1.0));
    if (score < conf) return;
    uint at = b * pc.per_b + 4 * i, pk = b * pc.per_k + 10 * i;
    vec4 r = vec4(LD(bx[at]), LD(bx[at + 1]), LD(bx[at + 2]), LD(bx[at + 3]));
    vec4 box;
    if (HEAD == SCRFD) {  // distances from the anchor's centre to the four sides, in strides
      float cx = gx * sf, cy = gy * sf;
      box = vec4(cx - r.x * sf, cy - r.y * sf, cx + r.z * sf, cy + r.w * sf);
      for (int k = 0; k < 5; ++k) kps[k] = vec2(cx + LD(kp[pk + 2 * k]) * sf, cy + LD(kp[pk + 2 * k + 1]) * sf);
    } else {  // offsets from the cell's corner and log sizes, in strides
      box = center_box((gx + r.x) * sf, (gy + r.y) * sf, exp(r.z) * sf, exp(r.w) * sf);
      for (int k = 0; k < 5; ++k) kps[k] = vec2((gx + LD(kp[pk + 2 * k])) * sf, (gy + LD(kp[pk + 2 * k + 1])) * sf);
    }
    emit(b, i, score, 0, box, kps);
  } else if (HEAD == ULTRAFACE) {  // softmax over (background, face); corners as fractions of the input
    float score = LD(a[b * pc.per_a + 2 * i + 1]);
    if (score < conf) return;
    uint at = b * pc.per_b + 4 * i;
    emit(b, i, score, 0,
         vec4(LD(bx[at]) * pc.width, LD(bx[at + 1]) * pc.height, LD(bx[at + 2]) * pc.width, LD(bx[at + 3]) * pc.height),
         kps);
  } else if (HEAD == BLAZEFACE) {  // one anchor grid: offsets from the anchors in input pixels, the score a logit
    float score = 1.0 / (1.0 + exp(-clamp(LD(a[b * pc.per_a + i]), -100.0, 100.0)));
    if (score < conf) return;
    uint cell = i / uint(pc.anchors);
    float sx = pc.width / float(pc.cells), sy = pc.height / float(pc.cells);
    float ax = (float(cell % uint(pc.cells)) + 0.5) * sx, ay = (float(cell / uint(pc.cells)) + 0.5) * sy;
    uint at = b * pc.per_b + i * uint(pc.box_width);
    for (int k = 0; k < pc.keypoints && k < 6; ++k)
      kps[k] = vec2(ax + LD(bx[at + 4 + 2 * k]), ay + LD(bx[at + 5 + 2 * k]));
    emit(b, i, score, 0, center_box(ax + LD(bx[at]), ay + LD(bx[at + 1]), LD(bx[at + 2]), LD(bx[at + 3])), kps);
  }
}
