// The vision families whose encoders are plain pre-norm ViT stacks, told
// apart by their discriminators: CLIP (pre-encoder LayerNorm, class token,
// quick-GELU), SigLIP (no class token, tanh GELU; its attention-pool head
// stays outside), DINOv2 (LayerScale, class token, optional registers, erf
// GELU) and Depth Anything v2 (DINOv2 with four taps feeding the DPT head).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "families/encoder_layer.h"

namespace kestrel::families {

// What precedes the encoder: the patch embedding and its tokens.
struct Embedding {
  bool patch_conv = false;  // a Conv whose kernel equals its stride
  bool class_token = false;
  int64_t registers = 0;
  bool position = false;  // a constant position embedding is added
};

// Walks back from the encoder's input to the patch embedding.
Embedding describe_embedding(const GraphIndex& gi, int encoder_input);

struct StackTraits {
  const std::vector<EncoderLayer>* layers;
  bool pre_norm;
  size_t taps;  // layer outputs read after the stack
  Embedding embedding;
};

// The first family (in a fixed order) whose signature the stack carries,
// or nullopt with the reason each family refused in `why`.
std::optional<std::string> classify_vit(const StackTraits& s, std::string& why);

}  // namespace kestrel::families
