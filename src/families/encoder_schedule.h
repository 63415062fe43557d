// One schedule per fused encoder: the typed list of steps a fused node
// (TransformerEncoder, RopeEncoder, ViTDetEncoder) runs, built once from its
// spec. Every backend runs every family by implementing each step kind once
// (StepRunner); nothing else about a family reaches a backend.
//
// Steps read and write named buffers. The residual stream is Stream; a
// Linear with `residual` adds its result to its output buffer (the stream).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "families/vitdet_spec.h"
#include "ir/graph.h"
#include "ops/activation.h"

namespace kestrel::families {

enum class Buffer : uint8_t {
  Input,     // the node's input 0 (read only)
  Stream,    // the residual stream
  Normed,    // a LayerNorm's output
  Windowed,  // the normed tokens gathered into windows (ViTDet)
  Q, K, V,   // the projections, [rows, width] with head h in columns [h*hd, (h+1)*hd)
  Context,   // attention's output, in the rows of Q
  Gridded,   // a windowed context scattered back onto the grid
  Hidden,    // the MLP's first projection
  Gated,     // a gated MLP's act(first half) * second half
  // A padding-free run's projections and context on its live tokens' rows;
  // Q, K, V and Context then hold them on the [batch, tokens] grid.
  PackedQ, PackedK, PackedV, PackedContext,
};
inline constexpr int kBufferCount = int(Buffer::PackedContext) + 1;

// Norm: LayerNorm of in's rows into out. Copy: in to out. Linear: out =
// act(in x weight + bias) (+ out with residual). Window / Unwindow: the
// grid's tokens gathered into windows of side `window` (zeros past the
// grid's edge) / scattered back (the padding dropped). Rotary: Q and K
// rotated in place, each row at its token's position. Attention: Q, K, V
// into Context per (sequence, head). Glu: out = act(in's first half) x its
// second half. Tap: the stream copied to node output `output` (in a
// padding-free run unpacked onto the grid, zeros at padded tokens). Pack /
// Unpack (padding-free runs): in's rows on the [batch, tokens] grid to the
// live tokens' rows of out / back, zeros at padded tokens.
enum class StepKind : uint8_t { Norm, Copy, Linear, Window, Unwindow, Rotary, Attention, Glu, Tap, Pack, Unpack };

struct Step {
  StepKind kind = StepKind::Copy;
  int64_t layer = -1;  // -1: before the first layer
  Buffer in = Buffer::Stream, out = Buffer::Stream;
  // The rows are the layer's window tokens (ViTDet windows of side
  // `window`, padded past the grid's edge) rather than the stream's tokens.
  bool windowed = false;
  // Node input indices: Norm's scale and bias, Linear's weight [k, n] and
  // bias [n]; -1 for an absent bias.
  int weight = -1, bias = -1;
  float epsilon = 0;                                // Norm
  ops::Activation act = ops::Activation::None;      // Linear's epilogue
  bool residual = false;                            // Linear: out += in x weight + bias
  int64_t window = 0;  // a windowed step's, and a grid's Attention's, window side; 0: the whole grid
  // Attention of Q, K, V into Context (in, out unused).
  float scale = 1;                // multiplies q.k
  bool masked = false;            // keys where the padding mask is 0 are left out
  int64_t sliding = -1;           // keys within |query - key| <= sliding; -1: all
  // A query that may see no key gets what its graph gives it: the average
  // of every value when masked scores are a finite minimum (they all tie),
  // zeros when they are -inf (the exporters' NaN guard).
  bool finite_masked = false;
  int rel_h = -1, rel_w = -1;     // decomposed relative-position tables (ViTDet): node inputs
  int output = -1;                // Tap: the node output the stream is copied to
};

struct EncoderSchedule {
  int64_t heads = 0, head_dim = 0;
  size_t input_rank = 3;  // 3: [batch, tokens, width]; 4: a grid [batch, height, width, channels]
  // Under float16 storage the residual stream may be float16 too: the
  // vision encoders' streams stay far inside its range. ModernBERT-large's
  // reaches ~29000, where float16 steps by 16, so the rotary encoder's
  // stream stays float32 (its projections still read float16 operands and
  // add into the float32 stream in their epilogue).
  bool half_stream = true;
  int mask_input = -1;             // the key padding mask [batch, tokens]; -1: none
  bool mask_right_padded = false;  // the mask must be ones then zeros (each sequence runs at its own length)
  // Only the live tokens' rows are computed: the stream, the norms, the
  // projections and the MLP hold the sequences' live tokens packed one after
  // another; rotary embedding and attention run on the [batch, tokens] grid
  // (Unpack before, Pack after), and the taps read zero at padded tokens.
  // Set by the claim (ClaimOptions::padding_free) on a right-padded mask.
  bool padding_free = false;
  std::vector<float> inv_freq;     // Rotary: layer l's frequencies are [l * head_dim / 2, (l + 1) * head_dim / 2)
  std::vector<Step> steps;
  int outputs = 0;

  // The schedule of a fused node; throws an Error naming it when its inputs
  // and attributes are inconsistent.
  static EncoderSchedule of(const ir::Node& n);
  // Layer l's rotary frequencies.
  std::vector<float> frequencies(int64_t layer) const;
};

// One run's sizes, from the input's shape.
struct EncoderShape {
  int64_t batch = 0, height = 0, width = 0;  // rank 3: height is the token count, width 1
  int64_t channels = 0;                      // the stream's width
  int64_t live_rows = -1;                    // a padding-free run's live tokens; -1: every token is a row
  int64_t rows() const { return batch * height * width; }

  // The sequences attention runs over and their length: the batch's
  // sequences, or for a grid the windows of side `window` (0: one per image).
  struct Attention {
    int64_t sequences = 0, tokens = 0;
    WindowGrid grid;  // rank 4 only
  };
  Attention attention(const EncoderSchedule& s, int64_t window) const;
  // The rows a step's buffers hold (Norm, Copy, Linear, Glu): the window
  // tokens of a windowed step, the live tokens of a padding-free run.
  int64_t rows(const EncoderSchedule& s, const Step& step) const;

  // Checks x against the schedule (a float input of its rank, width heads x
  // head_dim); throws an Error naming the node.
  static EncoderShape of(const ir::Node& n, const EncoderSchedule& s, const Shape& x);
};

// A padding-free run's rows: the live tokens of right-padded sequences of
// `tokens`, packed in order.
struct LiveRows {
  std::vector<int32_t> packed;  // packed row i's row on the [batch, tokens] grid
  std::vector<int32_t> grid;    // grid row r's packed row, or -1 at a padded token
  static LiveRows of(const std::vector<int64_t>& lengths, int64_t tokens);
};

// The floats each buffer needs for a run (Input's stays 0); `columns(input)`
// gives a weight input's column count. A padding-free run's buffers are
// sized for every token, so its memory depends on the shapes alone.
std::array<int64_t, kBufferCount> buffer_floats(const EncoderSchedule& s, const EncoderShape& shape,
                                                const std::function<int64_t(int input)>& columns);

// Checks a key padding mask's shape against the run's (an Error naming the node).
void check_padding_mask(const ir::Node& n, const Shape& mask, int64_t batch, int64_t tokens);
// Checks a ViTDet layer's relative-position tables span its attention grid.
void check_relative_tables(const ir::Node& n, const Step& attention, const WindowGrid& grid, int64_t rows_h,
                           int64_t rows_w);

// What a backend implements: each step kind once.
class StepRunner {
 public:
  virtual ~StepRunner() = default;
  virtual void norm(const Step& s) = 0;
  virtual void copy(const Step& s) = 0;
  virtual void linear(const Step& s) = 0;
  virtual void window(const Step& s) = 0;
  virtual void unwindow(const Step& s) = 0;
  virtual void rotary(const Step& s) = 0;
  virtual void attention(const Step& s) = 0;
  virtual void glu(const Step& s) = 0;
  virtual void tap(const Step& s) = 0;
  virtual void pack(const Step& s) = 0;
  virtual void unpack(const Step& s) = 0;
};

// Runs every step of the schedule, in order.
void run_schedule(const EncoderSchedule& s, StepRunner& runner);

}  // namespace kestrel::families
