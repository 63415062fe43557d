#!/usr/bin/env python3
"""Builds each transformer family Kestrel fuses from its real PyTorch definition
(Hugging Face transformers, torch.nn) with random weights, exports it with both
torch exporters, and records ONNX Runtime CPU EP outputs for fixed inputs.

  python3 tools/export_models.py --out tests/models            # tiny fixtures (committed)
  python3 tools/export_models.py --out DIR --full clip sam ...   # full-size models for benchmarks

Each model lands in OUT/<name>/ as:
  torchscript.onnx   torch.onnx.export(dynamo=False, opset 17)
  dynamo.onnx        torch.onnx.export(dynamo=True, opset 18), when that exporter works
  input_<i>.npy      the fixed inputs, in the model's input order
  <exporter>_output_<i>.npy   ONNX Runtime CPU EP's outputs for that file
  meta.json          family, config, input and output names, torch vs ORT agreement
Weights are random but not degenerate: every parameter, LayerNorm scales and
LayerScale included, is redrawn, so a kernel that ignores one shows up.

Needs torch, transformers, onnx and onnxruntime (the GPU machine has them).
"""
import argparse
import json
import os
import sys
import traceback

import numpy as np
import torch

SEED = 1234


def randomize(model):
    """Redraws every parameter: weights ~ N(0, 0.5/sqrt(fan_in)), 1-D params around their init."""
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                # Conv weights [out, in, k...]: fan-in is all but the first dim; Linear
                # weights, embeddings and position tables: the last dim.
                fan_in = p[0].numel() if p.dim() >= 3 and "conv" in name.lower() or p.dim() == 4 else p.shape[-1]
                p.copy_(torch.randn(p.shape, generator=g) * (0.5 / fan_in ** 0.5))
            else:
                # LayerNorm/LayerScale scales stay near their init (1 or the LayerScale value),
                # biases and tokens near 0, but none exactly.
                p.copy_(p + 0.1 * torch.randn(p.shape, generator=g) + (0.5 if p.abs().max() == 0 and "weight" in name else 0))
    return model.eval()


def keep_depth_positive(model, name, full):
    """At full size, random weights drive every pre-ReLU depth below zero (an
    all-zero map compares as nothing): lift the head's last conv bias."""
    if name == "depth_anything" and full:
        with torch.no_grad():
            model.head.conv3.bias.fill_(1.0)


def image(batch, size, channels=3):
    g = torch.Generator().manual_seed(SEED + 1)
    h, w = (size, size) if isinstance(size, int) else size
    return torch.randn(batch, channels, h, w, generator=g)


# ---------------------------------------------------------------- families


def clip(full):
    from transformers import CLIPVisionConfig, CLIPVisionModel
    cfg = (CLIPVisionConfig(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                            image_size=224, patch_size=16)
           if full else
           CLIPVisionConfig(hidden_size=64, intermediate_size=136, num_hidden_layers=2, num_attention_heads=4,
                            image_size=36, patch_size=6))  # 36 patches + class token = 37 tokens
    return CLIPVisionModel(cfg), (image(1, cfg.image_size),), ["pixel_values"], ["last_hidden_state", "pooler_output"], cfg


def siglip(full):
    from transformers import SiglipVisionConfig, SiglipVisionModel
    cfg = (SiglipVisionConfig(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                              image_size=224, patch_size=16)
           if full else
           SiglipVisionConfig(hidden_size=64, intermediate_size=120, num_hidden_layers=2, num_attention_heads=2,
                              image_size=35, patch_size=7))  # 25 tokens, head dim 32
    return SiglipVisionModel(cfg), (image(1, cfg.image_size),), ["pixel_values"], ["last_hidden_state", "pooler_output"], cfg


def dinov2(full):
    from transformers import Dinov2Config, Dinov2Model
    cfg = (Dinov2Config(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, image_size=518, patch_size=14)
           if full else
           Dinov2Config(hidden_size=48, num_hidden_layers=2, num_attention_heads=3, mlp_ratio=2, image_size=35,
                        patch_size=7))  # 26 tokens, head dim 16
    return Dinov2Model(cfg), (image(1, cfg.image_size),), ["pixel_values"], ["last_hidden_state", "pooler_output"], cfg


def dinov2_registers(full):
    from transformers import Dinov2WithRegistersConfig, Dinov2WithRegistersModel
    cfg = (Dinov2WithRegistersConfig(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, image_size=518,
                                     patch_size=14, num_register_tokens=4)
           if full else
           Dinov2WithRegistersConfig(hidden_size=48, num_hidden_layers=2, num_attention_heads=3, mlp_ratio=2,
                                     image_size=35, patch_size=7, num_register_tokens=4))  # 1 + 4 + 25 tokens
    return (Dinov2WithRegistersModel(cfg), (image(1, cfg.image_size),), ["pixel_values"],
            ["last_hidden_state", "pooler_output"], cfg)


def depth_anything(full):
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config
    if full:  # Depth-Anything-V2-Small-hf's configuration
        backbone = Dinov2Config(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, image_size=518,
                                patch_size=14, out_indices=[3, 6, 9, 12], reshape_hidden_states=False)
        cfg = DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=384, patch_size=14,
                                  neck_hidden_sizes=[48, 96, 192, 384], fusion_hidden_size=64, head_hidden_size=32)
        size = 518
    else:
        backbone = Dinov2Config(hidden_size=48, num_hidden_layers=4, num_attention_heads=3, mlp_ratio=2,
                                image_size=70, patch_size=14, out_indices=[1, 2, 3, 4], reshape_hidden_states=False)
        cfg = DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=48, patch_size=14,
                                  neck_hidden_sizes=[8, 16, 24, 48], fusion_hidden_size=16, head_hidden_size=8)
        size = 70  # 25 patches + class token
    return DepthAnythingForDepthEstimation(cfg), (image(1, size),), ["pixel_values"], ["predicted_depth"], cfg


def sam(full):
    from transformers import SamVisionConfig, SamVisionModel
    cfg = (SamVisionConfig()  # ViT-B: 768 wide, 12 layers, window 14, global layers 2, 5, 8, 11, 1024 px
           if full else
           SamVisionConfig(hidden_size=48, num_hidden_layers=4, num_attention_heads=3, mlp_dim=96, image_size=128,
                           patch_size=16, window_size=3, global_attn_indexes=[1, 3], output_channels=32))
    # 8x8 patches; windows of 3 pad them to 9x9
    return SamVisionModel(cfg), (image(1, cfg.image_size),), ["pixel_values"], ["last_hidden_state"], cfg


def _token_batch(vocab, batch, length, live):
    g = torch.Generator().manual_seed(SEED + 2)
    ids = torch.randint(5, vocab, (batch, length), generator=g)
    mask = torch.zeros(batch, length, dtype=torch.int64)
    for b, n in enumerate(live):
        mask[b, :n] = 1
        ids[b, n:] = 0  # right padding with the pad token
    return ids, mask


def _modernbert_config(full, large=False):
    from transformers import ModernBertConfig
    if full:
        if large:
            return ModernBertConfig(hidden_size=1024, intermediate_size=2624, num_hidden_layers=28,
                                    num_attention_heads=16)
        return ModernBertConfig()  # ModernBERT-base: 768 wide, 22 layers
    # 4 layers: global every 3rd (layers 0 and 3), sliding window 8 on the others
    return ModernBertConfig(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                            num_attention_heads=4, global_attn_every_n_layers=3, local_attention=8,
                            max_position_embeddings=64, pad_token_id=0, global_rope_theta=160000.0,
                            local_rope_theta=10000.0)


def modernbert(full, large=False):
    from transformers import ModernBertModel
    cfg = _modernbert_config(full, large)
    length, live = (512, [512]) if full else (13, [13, 9])  # a mixed-length, right-padded batch
    ids, mask = _token_batch(cfg.vocab_size, len(live), length, live)
    return ModernBertModel(cfg), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"], cfg


def modernbert_single(full):
    """ModernBERT as a new user exports it: transformers' defaults, one
    sequence, the attention mask all ones (base at full size)."""
    from transformers import ModernBertModel
    cfg = _modernbert_config(full, False)
    length = 512 if full else 13
    ids, mask = _token_batch(cfg.vocab_size, 1, length, [length])
    return ModernBertModel(cfg), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"], cfg


def modernbert_large(full):
    return modernbert(full, large=True)


def modernbert_batch(full):
    """ModernBERT-base on a right-padded batch of four sequences of different lengths
    (full size: 512, 384, 256 and 128 live tokens of 512), for the padding cost."""
    from transformers import ModernBertModel
    cfg = _modernbert_config(full, False)
    length, live = (512, [512, 384, 256, 128]) if full else (13, [13, 9, 5, 2])
    ids, mask = _token_batch(cfg.vocab_size, len(live), length, live)
    return ModernBertModel(cfg), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"], cfg


def modernbert_b8(full):
    """ModernBERT-base on eight full sequences (8 x 512 tokens at full size), the
    throughput case."""
    from transformers import ModernBertModel
    cfg = _modernbert_config(full, False)
    length = 512 if full else 13
    ids, mask = _token_batch(cfg.vocab_size, 8, length, [length] * 8)
    return ModernBertModel(cfg), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"], cfg


def modernbert_mixed(full):
    """ModernBERT-base on a right-padded batch of sixteen sequences whose lengths
    spread evenly from 32 to 512 tokens (full size; about half the batch is live),
    the serving case for padding-free runs."""
    from transformers import ModernBertModel
    cfg = _modernbert_config(full, False)
    length, live = (512, [32 + 32 * i for i in range(16)]) if full else (13, [1 + (i % 13) for i in range(16)])
    ids, mask = _token_batch(cfg.vocab_size, len(live), length, live)
    return ModernBertModel(cfg), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"], cfg


def clip_batch(full):
    """CLIP's vision tower on a batch of eight images."""
    model, _, in_names, out_names, cfg = clip(full)
    return model, (image(8, cfg.image_size),), in_names, out_names, cfg


def clip_b64(full):
    """CLIP's vision tower on a batch of 64 images (the throughput batch)."""
    model, _, in_names, out_names, cfg = clip(full)
    return model, (image(64, cfg.image_size),), in_names, out_names, cfg


class BertThenPreNormStack(torch.nn.Module):
    """A ModernBERT encoder followed by torch pre-norm TransformerEncoderLayers."""

    def __init__(self, cfg, layers):
        super().__init__()
        from transformers import ModernBertModel
        self.bert = ModernBertModel(cfg)
        layer = torch.nn.TransformerEncoderLayer(d_model=cfg.hidden_size, nhead=cfg.num_attention_heads,
                                                 dim_feedforward=2 * cfg.hidden_size, batch_first=True,
                                                 norm_first=True, activation="gelu")
        self.stack = torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)

    def forward(self, input_ids, attention_mask):
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.stack(h, src_key_padding_mask=attention_mask == 0)


def modernbert_stack(full):
    cfg = _modernbert_config(full)
    length, live = (512, [512]) if full else (13, [13, 9])
    ids, mask = _token_batch(cfg.vocab_size, len(live), length, live)
    return BertThenPreNormStack(cfg, 2), (ids, mask), ["input_ids", "attention_mask"], ["hidden"], cfg


FAMILIES = {
    "clip": clip, "siglip": siglip, "dinov2": dinov2, "dinov2_registers": dinov2_registers,
    "depth_anything": depth_anything, "sam": sam, "modernbert": modernbert, "modernbert_large": modernbert_large,
    "modernbert_stack": modernbert_stack, "modernbert_batch": modernbert_batch, "clip_batch": clip_batch,
    "clip_b64": clip_b64,
    "modernbert_single": modernbert_single, "modernbert_b8": modernbert_b8, "modernbert_mixed": modernbert_mixed,
}
TINY = ["clip", "siglip", "dinov2", "dinov2_registers", "depth_anything", "sam", "modernbert", "modernbert_stack"]


# ---------------------------------------------------------------- export


def export(model, args, in_names, out_names, path, dynamo, dynamic_text):
    kw = dict(input_names=in_names, output_names=out_names)
    if dynamo:
        if dynamic_text:
            b, s = torch.export.Dim("batch", max=64), torch.export.Dim("seq", max=8192)
            kw["dynamic_shapes"] = {n: {0: b, 1: s} for n in in_names}
        prog = torch.onnx.export(model, args, dynamo=True, opset_version=18, external_data=False, **kw)
        prog.save(path)
    else:
        if dynamic_text:
            kw["dynamic_axes"] = {n: {0: "batch", 1: "seq"} for n in in_names}
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17, do_constant_folding=True, **kw)


def flat_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    return [t for t in out if isinstance(t, torch.Tensor)]


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    d = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / d) if d else 1.0


def build_one(name, out_dir, full, exporters):
    import onnxruntime as ort
    torch.manual_seed(SEED)
    model, args, in_names, out_names, cfg = FAMILIES[name](full)
    randomize(model)
    keep_depth_positive(model, name, full)
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        ref = flat_outputs(model(*args))[:len(out_names)]
    feeds = {n: a.numpy() for n, a in zip(in_names, args)}
    for i, a in enumerate(args):
        np.save(os.path.join(d, f"input_{i}.npy"), a.numpy())
    meta = {"family": name.split("_")[0] if name.startswith("modernbert") else name.replace("_registers", ""),
            "model": name, "full": full, "inputs": in_names, "outputs": out_names,
            "config": json.loads(cfg.to_json_string()) if hasattr(cfg, "to_json_string") else {},
            "torch": torch.__version__, "exports": {}}
    import transformers
    meta["transformers"] = transformers.__version__
    meta["onnxruntime"] = ort.__version__
    for exp in exporters:
        path = os.path.join(d, f"{exp}.onnx")
        try:
            torch.backends.mha.set_fastpath_enabled(False)  # nn.TransformerEncoderLayer exports as plain ops
            export(model, args, in_names, out_names, path, exp == "dynamo", name.startswith("modernbert"))
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            outs = sess.run(None, feeds)
            rec = {"bytes": os.path.getsize(path), "outputs": []}
            for i, o in enumerate(outs):
                if not full:
                    np.save(os.path.join(d, f"{exp}_output_{i}.npy"), o)
                t = ref[i].numpy() if i < len(ref) else None
                rec["outputs"].append({"shape": list(o.shape),
                                       "torch_cosine": cosine(o, t) if t is not None and t.shape == o.shape else None,
                                       "torch_max_abs": float(np.abs(o - t).max()) if t is not None and t.shape == o.shape else None})
            meta["exports"][exp] = rec
            print(f"{name} {exp}: ok, {rec['bytes']} bytes, {rec['outputs']}", flush=True)
        except Exception as e:  # one exporter failing must not hide the others
            meta["exports"][exp] = {"error": f"{type(e).__name__}: {e}"[:2000]}
            print(f"{name} {exp}: FAILED {type(e).__name__}: {str(e)[:400]}", flush=True)
            traceback.print_exc(limit=3)
            if os.path.exists(path):
                os.remove(path)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--full", nargs="*", help="full-size models to build (default: the tiny fixtures)")
    ap.add_argument("--only", nargs="*", help="tiny fixtures to build (default: all)")
    ap.add_argument("--exporters", nargs="*", default=["torchscript", "dynamo"])
    a = ap.parse_args()
    names = a.full if a.full else (a.only or TINY)
    failed = 0
    for n in names:
        if n not in FAMILIES:
            sys.exit(f"unknown model '{n}'; choose from {', '.join(FAMILIES)}")
        try:
            build_one(n, a.out, bool(a.full), a.exporters)
        except Exception as e:
            failed += 1
            print(f"{n}: FAILED to build: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=5)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
