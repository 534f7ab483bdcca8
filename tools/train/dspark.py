"""A DSpark drafter for a K3 target (K3-SPEC.md section 5), its training on the target's own hidden
states, and export in DSpark's format (one BF16 model.safetensors, names without a prefix).

Context: the target's raw layer outputs at `target_layer_ids`, concatenated, then
ctx = context_norm(context_proj(concat)); per draft layer each context row enters the latent
cache as [kv_a_layernorm(c) | rope(k_pe)] with [c | k_pe] = kv_a_proj_with_mqa(ctx).
Block: [anchor, mask x (T-1)] at positions p..p+T-1, embedded with the target's embedding; every
block row attends to the context rows before p and to all block rows; final_norm; the target's
lm_head gives U; drafts x_k = argmax(U[k-1] + markov_w1[x_{k-1}] @ markov_w2^T).
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import k3_model
import safetensors_io

RMSNorm, Weight, linear = k3_model.RMSNorm, k3_model.Weight, k3_model.linear


def default_config(target, vocab):
    """A drafter shaped for `target` (a K3 config): taps spread over its layers like K3's."""
    L = target["layers"]
    taps = sorted({max(0, min(L - 1, round(x * (L - 1)))) for x in (0.15, 0.55, 0.95)})
    return dict(hidden=target["hidden"], layers=2, heads=target["mla_heads"], q_lora=target["q_lora"],
                kv_lora=target["kv_lora"], nope=target["nope"], rope=target["rope"], v_head=target["v_head"],
                intermediate=2 * target["hidden"], markov_rank=32, block_size=7, target_layer_ids=taps,
                target_hidden=target["hidden"], target_layers=L, vocab=vocab, mask_token_id=vocab - 256 + 253,
                bos=vocab - 256, rms_eps=1e-5, rope_theta=50000.0, factor=32.0, original_max=32768,
                beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0)


def yarn_inv_freq(c):
    d = c["rope"]
    corr = lambda r: d * math.log(c["original_max"] / (r * 2 * math.pi)) / (2 * math.log(c["rope_theta"]))
    low = max(math.floor(corr(c["beta_fast"])), 0)
    high = min(math.ceil(corr(c["beta_slow"])), d - 1)
    if low == high:
        high += 0.001
    inv = []
    for i in range(d // 2):
        f = c["rope_theta"] ** (-2.0 * i / d)
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        inv.append((f / c["factor"]) * ramp + f * (1 - ramp))
    return torch.tensor(inv, dtype=torch.float64)


def mscale(factor, m):
    return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0


def rope(x, pos, inv_freq, cs_scale=1.0):
    """Rotates adjacent pairs (2i, 2i+1) of the last dimension; pos broadcasts against x[..., 0]."""
    ang = pos.to(torch.float64).unsqueeze(-1) * inv_freq.to(pos.device)
    cos = (torch.cos(ang) * cs_scale).to(x.dtype)
    sin = (torch.sin(ang) * cs_scale).to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], -1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, nh = c["hidden"], c["heads"]
        self.c = c
        self.q_a_proj = linear(H, c["q_lora"])
        self.q_a_layernorm = RMSNorm(c["q_lora"], c["rms_eps"])
        self.q_b_proj = linear(c["q_lora"], nh * (c["nope"] + c["rope"]))
        self.kv_a_proj_with_mqa = linear(H, c["kv_lora"] + c["rope"])
        self.kv_a_layernorm = RMSNorm(c["kv_lora"], c["rms_eps"])
        self.kv_b_proj = linear(c["kv_lora"], nh * (c["nope"] + c["v_head"]))
        self.o_proj = linear(nh * c["v_head"], H)

    def rows(self, x, pos, inv_freq, cs):
        """Cache rows [kv_a_layernorm(c) | rope(k_pe)] of inputs x at positions pos."""
        R = self.c["kv_lora"]
        kv = self.kv_a_proj_with_mqa(x)
        return torch.cat([self.kv_a_layernorm(kv[..., :R]), rope(kv[..., R:], pos, inv_freq, cs)], -1)

    def forward(self, x, pos, ctx_rows, mask, inv_freq, cs, scale):
        """x [B, M, H] block rows at positions pos [B, M]; ctx_rows [B, S, R+P]; mask [B, M, S+M] (True = attend)."""
        c = self.c
        B, M, _ = x.shape
        nh, N, P, R, Vd = c["heads"], c["nope"], c["rope"], c["kv_lora"], c["v_head"]
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).reshape(B, M, nh, N + P)
        q = torch.cat([q[..., :N], rope(q[..., N:], pos.unsqueeze(-1), inv_freq, cs)], -1)
        rows = torch.cat([ctx_rows, self.rows(x, pos, inv_freq, cs)], 1)  # [B, S+M, R+P]
        kv = self.kv_b_proj(rows[..., :R]).reshape(B, rows.shape[1], nh, N + Vd)
        s = (torch.einsum("bmhd,bshd->bhms", q[..., :N], kv[..., :N])
             + torch.einsum("bmhd,bsd->bhms", q[..., N:], rows[..., R:])) * scale
        s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
        o = torch.einsum("bhms,bshd->bmhd", torch.softmax(s, -1), kv[..., N:])
        return self.o_proj(o.reshape(B, M, nh * Vd))


class MLP(nn.Module):
    def __init__(self, H, I):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = linear(H, I), linear(H, I), linear(I, H)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden"], c["rms_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden"], c["rms_eps"])
        self.mlp = MLP(c["hidden"], c["intermediate"])


class MarkovHead(nn.Module):
    def __init__(self, V, r):
        super().__init__()
        self.markov_w1, self.markov_w2 = Weight(V, r), Weight(V, r)

    def bias(self, prev):
        """markov_w1[prev] @ markov_w2^T for ids prev [...] -> [..., V]."""
        return self.markov_w1.weight[prev] @ self.markov_w2.weight.t()


class ConfidenceHead(nn.Module):
    """Training-only in DSpark (the engine skips it); kept so the checkpoint has DSpark's tensors."""

    def __init__(self, H, r):
        super().__init__()
        self.proj = nn.Linear(H + r, 1)


class DSpark(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        nt = len(c["target_layer_ids"])
        self.context_proj = linear(nt * c["target_hidden"], c["hidden"])
        self.context_norm = RMSNorm(c["hidden"], c["rms_eps"])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c["layers"])])
        self.final_norm = RMSNorm(c["hidden"], c["rms_eps"])
        self.markov_head = MarkovHead(c["vocab"], c["markov_rank"])
        self.confidence_head = ConfidenceHead(c["hidden"], c["markov_rank"])
        self.register_buffer("inv_freq", yarn_inv_freq(c), persistent=False)
        self.cs = mscale(c["factor"], c["mscale"]) / mscale(c["factor"], c["mscale_all_dim"])
        self.scale = (c["nope"] + c["rope"]) ** -0.5 * mscale(c["factor"], c["mscale_all_dim"]) ** 2

    def base_logits(self, target, taps, ids, anchors):
        """taps: list of [B, S, Ht] target layer outputs for ids [B, S]; anchors [B, m] positions p
        (context rows are positions < p; the block is [ids[p], mask...] at p..p+T-1).
        Returns U [B, m, T, V] from the target's lm_head."""
        c = self.config
        B, S = ids.shape
        m, T = anchors.shape[1], c["block_size"]
        dev = ids.device
        ctx = self.context_norm(self.context_proj(torch.cat(taps, -1)))
        first = ids.gather(1, anchors)  # [B, m]
        block = torch.full((B, m, T), c["mask_token_id"], dtype=torch.long, device=dev)
        block[:, :, 0] = first
        pos = anchors.unsqueeze(-1) + torch.arange(T, device=dev)  # [B, m, T]
        h = target.model.embed_tokens(block).reshape(B, m * T, -1).to(ctx.dtype)
        pos = pos.reshape(B, m * T)
        ctx_pos = torch.arange(S, device=dev).expand(B, S)
        # Block rows of anchor a see context rows j < p_a and the T rows of their own block.
        row_anchor = anchors.repeat_interleave(T, 1)  # [B, mT]
        see_ctx = ctx_pos.unsqueeze(1) < row_anchor.unsqueeze(-1)  # [B, mT, S]
        blk = torch.arange(m, device=dev).repeat_interleave(T)
        see_blk = (blk.unsqueeze(1) == blk.unsqueeze(0)).expand(B, m * T, m * T)
        mask = torch.cat([see_ctx, see_blk], -1)
        for layer in self.layers:
            a = layer.self_attn
            rows = a.rows(ctx, ctx_pos, self.inv_freq, self.cs)
            h = h + a(layer.input_layernorm(h), pos, rows, mask, self.inv_freq, self.cs, self.scale)
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return target.lm_head(self.final_norm(h)).reshape(B, m, T, -1)

    def drafts(self, U, anchor, margins=None):
        """Greedy drafts through the Markov head for one block: U [T, V]. `margins` (a list) gets
        each step's top1 - top2 score."""
        out, prev = [], anchor
        for k in range(U.shape[0]):
            score = U[k] + self.markov_head.bias(torch.tensor(prev))
            prev = int(score.argmax())
            out.append(prev)
            if margins is not None:
                top2 = score.topk(2).values
                margins.append(float(top2[0] - top2[1]))
        return out


def init_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                v = torch.ones(p.shape)
            elif "markov" in name or "confidence" in name:
                v = torch.randn(p.shape, generator=g) * 0.02
            else:
                v = torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1])
                if name.endswith(("o_proj.weight", "down_proj.weight")):
                    v /= math.sqrt(2 * model.config["layers"])
            p.copy_(v)


def config_json(c):
    return {"architectures": ["K3DSparkModel"], "model_type": "k3_dspark", "torch_dtype": "bfloat16",
            "hidden_size": c["hidden"], "intermediate_size": c["intermediate"], "num_hidden_layers": c["layers"],
            "vocab_size": c["vocab"], "draft_vocab_size": c["vocab"], "num_attention_heads": c["heads"],
            "num_key_value_heads": c["heads"], "q_lora_rank": c["q_lora"], "kv_lora_rank": c["kv_lora"],
            "qk_nope_head_dim": c["nope"], "qk_rope_head_dim": c["rope"], "v_head_dim": c["v_head"],
            "mla_use_nope": False, "mla_use_output_gate": False, "rms_norm_eps": c["rms_eps"],
            "max_position_embeddings": 1048576, "rope_theta": c["rope_theta"],
            "rope_parameters": {"rope_type": "yarn", "factor": c["factor"],
                                "original_max_position_embeddings": c["original_max"], "rope_theta": c["rope_theta"],
                                "beta_fast": c["beta_fast"], "beta_slow": c["beta_slow"], "mscale": c["mscale"],
                                "mscale_all_dim": c["mscale_all_dim"]},
            "num_target_layers": len(c["target_layer_ids"]), "target_hidden_size": c["target_hidden"],
            "target_num_hidden_layers": c["target_layers"], "target_layer_ids": c["target_layer_ids"],
            "mask_token_id": c["mask_token_id"], "bos_token_id": c["bos"], "eos_token_id": c["bos"] + 2,
            "pad_token_id": c["bos"] + 255, "markov_rank": c["markov_rank"], "markov_head_type": "vanilla",
            "block_size": c["block_size"], "enable_confidence_head": True, "confidence_head_with_markov": True,
            "tie_word_embeddings": False}


def write(model, target, out_dir, info):
    """config.json and one BF16 model.safetensors; embed_tokens is a copy of the target's (DSpark
    ships one; the engine never reads it)."""
    os.makedirs(out_dir, exist_ok=True)
    items = [(k, v.detach().float().cpu().to(torch.bfloat16)) for k, v in model.state_dict().items()]
    items.append(("embed_tokens.weight", target.model.embed_tokens.weight.detach().float().cpu().to(torch.bfloat16)))
    safetensors_io.write(os.path.join(out_dir, "model.safetensors"), sorted(items), {"torchspec_version": "0.1.0"})
    cfg = config_json(model.config)
    cfg["deltafin_trained"] = info
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, allow_nan=False)
        f.write("\n")


def config_from_json(j):
    rp = j.get("rope_parameters") or j.get("rope_scaling") or {}
    return dict(hidden=j["hidden_size"], layers=j["num_hidden_layers"], heads=j["num_attention_heads"],
                q_lora=j["q_lora_rank"], kv_lora=j["kv_lora_rank"], nope=j["qk_nope_head_dim"],
                rope=j["qk_rope_head_dim"], v_head=j["v_head_dim"], intermediate=j["intermediate_size"],
                markov_rank=j["markov_rank"], block_size=j.get("block_size", 7),
                target_layer_ids=j["target_layer_ids"], target_hidden=j.get("target_hidden_size", j["hidden_size"]),
                target_layers=j.get("target_num_hidden_layers", 0), vocab=j["vocab_size"],
                mask_token_id=j["mask_token_id"], bos=j.get("bos_token_id", 0), rms_eps=j.get("rms_norm_eps", 1e-5),
                rope_theta=rp.get("rope_theta", j.get("rope_theta", 10000.0)), factor=rp.get("factor", 1.0),
                original_max=rp.get("original_max_position_embeddings", 0), beta_fast=rp.get("beta_fast", 32.0),
                beta_slow=rp.get("beta_slow", 1.0), mscale=rp.get("mscale", 1.0),
                mscale_all_dim=rp.get("mscale_all_dim", 0.0))


def load(draft_dir, dtype=torch.float64):
    with open(os.path.join(draft_dir, "config.json")) as f:
        c = config_from_json(json.load(f))
    model = DSpark(c)
    stored = safetensors_io.read(os.path.join(draft_dir, "model.safetensors"))
    stored.pop("embed_tokens.weight", None)
    sd = {k: stored[k].to(dtype) for k in model.state_dict()}
    model.load_state_dict(sd)
    return model.to(dtype)
