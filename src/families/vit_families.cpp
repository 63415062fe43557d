#include "families/vit_families.h"

namespace kestrel::families {

Embedding describe_embedding(const GraphIndex& gi, int v) {
  Embedding e;
  for (int steps = 0; steps < 12; ++steps) {
    const ir::Node* n = gi.producer(v);
    if (!n || !n->domain.empty()) break;
    const std::string& op = n->op_type;
    if (op == "Conv") {
      std::vector<int64_t> k = n->attr_ints("kernel_shape"), s = n->attr_ints("strides");
      const Tensor* w = gi.constant(n->inputs.size() > 1 ? n->inputs[1] : -1);
      if (k.empty() && w && w->rank() == 4) k = {w->dim(2), w->dim(3)};
      e.patch_conv = !k.empty() && k == s;
      break;
    }
    if (op == "Transpose" || op == "Reshape" || op == "Flatten" || op == "Cast") {
      v = n->inputs[0];
    } else if (op == "Add") {
      int other = -1;
      for (int i : {0, 1})
        if (const Tensor* c = gi.constant(n->inputs[size_t(i)]); c && (c->rank() == 3 || c->rank() == 4)) {
          e.position = true;
          other = n->inputs[size_t(1 - i)];
        }
      if (other < 0) break;
      v = other;
    } else if (op == "Concat") {
      // Tokens joined along the sequence: constants are class/register
      // tokens; the computed pieces are the patches, or two Slices of one
      // value around inserted registers (DINOv2 with registers).
      std::vector<int> computed;
      for (int in : n->inputs) {
        const Tensor* c = gi.constant(in);
        if (c && c->rank() == 3) {
          if (c->dim(1) == 1 && !e.class_token && computed.empty()) e.class_token = true;
          else e.registers += c->dim(1);
        } else if (in >= 0) {
          computed.push_back(in);
        }
      }
      if (computed.size() == 1) {
        v = computed[0];
      } else if (computed.size() == 2) {
        const ir::Node* a = gi.producer(computed[0]);
        const ir::Node* b = gi.producer(computed[1]);
        if (!a || !b || a->op_type != "Slice" || b->op_type != "Slice" || a->inputs[0] != b->inputs[0]) break;
        v = a->inputs[0];
      } else {
        break;
      }
    } else {
      break;
    }
  }
  return e;
}

std::optional<std::string> classify_vit(const StackTraits& s, std::string& why) {
  const auto& L = *s.layers;
  auto all = [&](auto pred) {
    for (const EncoderLayer& l : L)
      if (!pred(l)) return false;
    return true;
  };
  const bool scaled = all([](const EncoderLayer& l) { return l.layer_scale1.defined() && l.layer_scale2.defined(); });
  const bool unscaled = all([](const EncoderLayer& l) { return !l.layer_scale1.defined() && !l.layer_scale2.defined(); });
  auto act_is = [&](Activation a) { return all([a](const EncoderLayer& l) { return l.act == a; }); };
  const bool biased_norms = all([](const EncoderLayer& l) { return l.norm1.bias.defined() && l.norm2.bias.defined(); });
  const Embedding& e = s.embedding;
  std::string reasons;
  auto refuse = [&](const char* family, const char* reason) {
    reasons += std::string(reasons.empty() ? "" : "; ") + family + ": " + reason;
    return false;
  };
  auto dinov2_like = [&](const char* family) {
    if (!e.patch_conv) return refuse(family, "no patch-embedding Conv before the encoder");
    if (!e.class_token) return refuse(family, "no class token");
    if (!scaled) return refuse(family, "no LayerScale");
    if (!act_is(Activation::GeluErf)) return refuse(family, "the MLP activation is not erf GELU");
    if (s.pre_norm) return refuse(family, "a LayerNorm before the encoder");
    if (!biased_norms) return refuse(family, "LayerNorms without bias");
    return true;
  };
  // Fixed order; the first family whose signature fits claims the stack.
  if (dinov2_like("depth_anything")) {
    if (s.taps >= 4) return "depth_anything";
    refuse("depth_anything", "fewer than four intermediate taps");
  }
  if (dinov2_like("dinov2")) return "dinov2";
  auto clip_ok = [&] {
    if (!e.patch_conv) return refuse("clip", "no patch-embedding Conv before the encoder");
    if (!s.pre_norm) return refuse("clip", "no LayerNorm before the encoder");
    if (!e.class_token) return refuse("clip", "no class token");
    if (!unscaled) return refuse("clip", "LayerScale");
    if (!act_is(Activation::QuickGelu)) return refuse("clip", "the MLP activation is not quick-GELU");
    if (!biased_norms) return refuse("clip", "LayerNorms without bias");
    return true;
  };
  if (clip_ok()) return "clip";
  auto siglip_ok = [&] {
    if (!e.patch_conv) return refuse("siglip", "no patch-embedding Conv before the encoder");
    if (s.pre_norm) return refuse("siglip", "a LayerNorm before the encoder");
    if (e.class_token) return refuse("siglip", "a class token");
    if (!unscaled) return refuse("siglip", "LayerScale");
    if (!act_is(Activation::GeluTanh)) return refuse("siglip", "the MLP activation is not tanh GELU");
    if (!biased_norms) return refuse("siglip", "LayerNorms without bias");
    return true;
  };
  if (siglip_ok()) return "siglip";
  why = reasons;
  return std::nullopt;
}

}  // namespace kestrel::families
