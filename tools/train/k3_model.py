"""Kimi K3 in PyTorch, written from K3-SPEC.md section 3, at any size.

Module and parameter names are the checkpoint's names without the `language_model.` prefix, so a
state_dict key is the tensor name (routed experts are the exception: one [E, out, in] parameter
per matrix and layer, split into K3's per-expert MXFP4 tensors at export).
Runs on PyTorch 1.13 (Debian's, CPU) and 2.x (CUDA).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import mxfp4


def rms(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


class RMSNorm(nn.Module):
    """x * rsqrt(mean(x^2) + eps) * w (the weight last)."""

    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return rms(x, self.eps) * self.weight


class Weight(nn.Module):
    """A holder whose only parameter is `weight` (conv kernels, the router), to keep K3's names."""

    def __init__(self, *shape):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(*shape))


def linear(i, o):
    return nn.Linear(i, o, bias=False)


def situ(g, u, beta, lbeta):
    """SiTU GLU activation: beta*tanh(g/beta)*sigmoid(g) * lbeta*tanh(u/lbeta)."""
    return beta * torch.tanh(g / beta) * torch.sigmoid(g) * (lbeta * torch.tanh(u / lbeta))


class SituMLP(nn.Module):
    def __init__(self, c, hidden, inter):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = linear(hidden, inter), linear(hidden, inter), linear(inter, hidden)
        self.beta, self.lbeta = c["situ_beta"], c["situ_linear_beta"]

    def forward(self, x):
        return self.down_proj(situ(self.gate_proj(x), self.up_proj(x), self.beta, self.lbeta))


def mix(entries, norm, proj, eps):
    """Block attention residual: softmax over entries of dot(V_i / rms(V_i), norm.weight * proj.weight[0]),
    then the weighted sum of the raw entries."""
    v = torch.stack(entries, 0)
    w = norm.weight * proj.weight[0]
    score = (rms(v, eps) * w).sum(-1)
    p = torch.softmax(score, dim=0)
    return (p.unsqueeze(-1) * v).sum(0)


def kda_recurrent(q, k, v, alpha, beta, state=None):
    """Per head: S = S * diag(alpha); S += k (beta (v - k^T S))^T; o = q^T S.
    q, k, alpha [B, T, h, dk]; v [B, T, h, dv]; beta [B, T, h]. Returns o [B, T, h, dv] and the state."""
    B, T, h, dk = k.shape
    dv = v.shape[-1]
    S = q.new_zeros(B, h, dk, dv) if state is None else state
    outs = []
    for t in range(T):
        S = S * alpha[:, t].unsqueeze(-1)
        kt = k[:, t]
        ks = torch.einsum("bhi,bhij->bhj", kt, S)
        u = beta[:, t].unsqueeze(-1) * (v[:, t] - ks)
        S = S + kt.unsqueeze(-1) * u.unsqueeze(-2)
        outs.append(torch.einsum("bhi,bhij->bhj", q[:, t], S))
    return torch.stack(outs, 1), S


def kda_chunked(q, k, v, alpha, beta, chunk=16):
    """The same recurrence, parallel inside chunks of `chunk` steps (WY form of the delta rule with
    per-key-dimension decay); equal to kda_recurrent up to rounding. Decays are taken relative to
    the chunk start, and a chunk of 16 steps at the gate's floor (log alpha >= -5 per step) stays
    within exp(80): inside fp32 range."""
    B, T, h, dk = k.shape
    dv = v.shape[-1]
    pad = (-T) % chunk
    if pad:
        q = F.pad(q, (0, 0, 0, 0, 0, pad))
        k = F.pad(k, (0, 0, 0, 0, 0, pad))
        v = F.pad(v, (0, 0, 0, 0, 0, pad))
        alpha = F.pad(alpha, (0, 0, 0, 0, 0, pad), value=1.0)
        beta = F.pad(beta, (0, 0, 0, pad))
    n = (T + pad) // chunk
    # [B, h, n, C, d]
    r = lambda x: x.reshape(B, n, chunk, h, -1).permute(0, 3, 1, 2, 4)
    q, k, v, la = r(q), r(k), r(v), r(torch.log(alpha))
    beta = beta.reshape(B, n, chunk, h).permute(0, 3, 1, 2)
    g = la.cumsum(-2)  # cumulative log decay inside the chunk, inclusive
    eg = torch.exp(g)
    kd = k * eg  # k_j * Gamma_j
    ki = k * torch.exp(-g)  # k_j / Gamma_j
    qd = q * eg
    # A[i, j] = beta_i k_i^T (Gamma_i / Gamma_j) k_j for j < i
    tri = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device)
    strict = torch.tril(tri, -1)
    A = (kd @ ki.transpose(-1, -2)) * beta.unsqueeze(-1)
    A = A.masked_fill(~strict, 0.0)
    # (I + A)^-1 by forward substitution (unit lower triangular)
    eye = torch.eye(chunk, dtype=q.dtype, device=q.device)
    Tm = torch.linalg.solve_triangular(eye + A, eye.expand_as(A).contiguous(), upper=False, unitriangular=True)
    # u_i = beta_i v_i - beta_i k_i^T Gamma_i S0 - sum_j A_ij u_j  ->  u = Tm (beta v - beta (k Gamma) S0)
    Bv = Tm @ (v * beta.unsqueeze(-1))
    Bk = Tm @ (kd * beta.unsqueeze(-1))
    qk = (qd @ ki.transpose(-1, -2)).masked_fill(~torch.tril(tri), 0.0)  # q_i^T (Gamma_i/Gamma_j) k_j, j <= i
    S = q.new_zeros(B, h, dk, dv)
    outs = []
    for c in range(n):
        u = Bv[:, :, c] - Bk[:, :, c] @ S
        outs.append(qd[:, :, c] @ S + qk[:, :, c] @ u)
        gl = g[:, :, c, -1:]  # [B, h, 1, dk]
        S = torch.exp(gl).transpose(-1, -2) * S + (ki[:, :, c] * torch.exp(gl)).transpose(-1, -2) @ u
    o = torch.stack(outs, 2).permute(0, 2, 3, 1, 4).reshape(B, n * chunk, h, dv)
    return o[:, :T]


class KDA(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, nh, d, K = c["hidden"], c["kda_heads"], c["kda_head_dim"], c["conv_kernel"]
        C = nh * d
        self.nh, self.d, self.K, self.eps, self.lower = nh, d, K, c["rms_eps"], c["gate_lower_bound"]
        for n in ("q_proj", "k_proj", "v_proj", "g_proj"):
            setattr(self, n, linear(H, C))
        self.o_proj = linear(C, H)
        self.f_a_proj, self.f_b_proj, self.b_proj = linear(H, d), linear(d, C), linear(H, nh)
        for n in ("q_conv1d", "k_conv1d", "v_conv1d"):
            setattr(self, n, Weight(C, 1, K))
        # Stored [head_dim] like K3's (one entry per head used, the rest zero padding).
        self.A_log = nn.Parameter(torch.zeros(d))
        self.dt_bias = nn.Parameter(torch.zeros(C))
        self.o_norm = RMSNorm(d, c["rms_eps"])
        self.chunked = True

    def conv(self, x, w):
        xt = F.pad(x.transpose(1, 2), (self.K - 1, 0))
        return F.silu(F.conv1d(xt, w, groups=w.shape[0])).transpose(1, 2)

    def forward(self, x):
        B, T, _ = x.shape
        nh, d = self.nh, self.d
        q = self.conv(self.q_proj(x), self.q_conv1d.weight).reshape(B, T, nh, d)
        k = self.conv(self.k_proj(x), self.k_conv1d.weight).reshape(B, T, nh, d)
        v = self.conv(self.v_proj(x), self.v_conv1d.weight).reshape(B, T, nh, d)
        q = q * torch.rsqrt(q.pow(2).sum(-1, keepdim=True) + 1e-6) * d ** -0.5
        k = k * torch.rsqrt(k.pow(2).sum(-1, keepdim=True) + 1e-6)
        z = (self.f_b_proj(self.f_a_proj(x)) + self.dt_bias).reshape(B, T, nh, d)
        log_alpha = self.lower * torch.sigmoid(torch.exp(self.A_log[:nh]).reshape(nh, 1) * z)
        alpha = torch.exp(log_alpha)
        beta = torch.sigmoid(self.b_proj(x))
        if self.chunked and x.dtype != torch.float64:
            o = kda_chunked(q, k, v, alpha, beta)
        else:
            o, _ = kda_recurrent(q, k, v, alpha, beta)
        o = self.o_norm(o) * torch.sigmoid(self.g_proj(x)).reshape(B, T, nh, d)
        return self.o_proj(o.reshape(B, T, nh * d))


class MLA(nn.Module):
    """NoPE multi-head latent attention with a gated output; the 'rope' lanes are not rotated."""

    def __init__(self, c):
        super().__init__()
        H, nh = c["hidden"], c["mla_heads"]
        self.nh, self.N, self.P, self.R, self.Vd = nh, c["nope"], c["rope"], c["kv_lora"], c["v_head"]
        self.q_a_proj = linear(H, c["q_lora"])
        self.q_a_layernorm = RMSNorm(c["q_lora"], c["rms_eps"])
        self.q_b_proj = linear(c["q_lora"], nh * (self.N + self.P))
        self.kv_a_proj_with_mqa = linear(H, self.R + self.P)
        self.kv_a_layernorm = RMSNorm(self.R, c["rms_eps"])
        self.kv_b_proj = linear(self.R, nh * (self.N + self.Vd))
        self.o_proj = linear(nh * self.Vd, H)
        self.g_proj = linear(H, nh * self.Vd)

    def forward(self, x):
        B, T, _ = x.shape
        nh, N, P, R, Vd = self.nh, self.N, self.P, self.R, self.Vd
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).reshape(B, T, nh, N + P)
        ckv = self.kv_a_proj_with_mqa(x)
        kv = self.kv_b_proj(self.kv_a_layernorm(ckv[..., :R])).reshape(B, T, nh, N + Vd)
        k = torch.cat([kv[..., :N], ckv[..., R:].unsqueeze(2).expand(B, T, nh, P)], -1)
        v = kv[..., N:]
        s = torch.einsum("bthd,bshd->bhts", q, k) * (N + P) ** -0.5
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        s = s.masked_fill(~causal, float("-inf"))
        o = torch.einsum("bhts,bshd->bthd", torch.softmax(s, -1), v).reshape(B, T, nh * Vd)
        return self.o_proj(o * torch.sigmoid(self.g_proj(x)))


class Router(nn.Module):
    def __init__(self, E, H):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(E, H))
        # Chosen-expert bias, not trained by gradient: nudged towards balanced load (aux-loss-free).
        self.register_buffer("e_score_correction_bias", torch.zeros(E))


class MoE(nn.Module):
    """Latent MoE: sigmoid router with bias for selection, renormalised weights, experts in a
    3584-style latent space (down-proj, experts, RMSNorm, up-proj), plus shared experts."""

    def __init__(self, c):
        super().__init__()
        H, E, Z, I = c["hidden"], c["experts"], c["latent"], c["moe_intermediate"]
        self.E, self.k, self.eps = E, c["top_k"], c["rms_eps"]
        self.beta, self.lbeta = c["situ_beta"], c["situ_linear_beta"]
        self.gate = Router(E, H)
        self.routed_expert_down_proj = linear(H, Z)
        self.routed_expert_norm = RMSNorm(Z, c["rms_eps"])
        self.routed_expert_up_proj = linear(Z, H)
        self.shared_experts = SituMLP(c, H, c["shared_experts"] * I) if c["shared_experts"] > 0 else None
        self.w1 = nn.Parameter(torch.zeros(E, I, Z))  # gate
        self.w2 = nn.Parameter(torch.zeros(E, Z, I))  # down
        self.w3 = nn.Parameter(torch.zeros(E, I, Z))  # up
        self.qat = False  # forward with the MXFP4 values the export will write
        self.load = None  # tokens per expert in the last training forward
        self._qcache = None  # (weight versions, MXFP4-rounded weights) for evaluation

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        s = torch.sigmoid(F.linear(x, self.gate.weight))
        _, idx = torch.topk(s + self.gate.e_score_correction_bias, self.k, dim=-1)
        ws = s.gather(1, idx)
        ws = ws / (ws.sum(-1, keepdim=True) + 1e-20)
        z = self.routed_expert_down_proj(x)
        w1, w2, w3 = self.w1, self.w2, self.w3
        if self.qat and torch.is_grad_enabled():
            w1, w2, w3 = mxfp4.fake_quantize(w1), mxfp4.fake_quantize(w2), mxfp4.fake_quantize(w3)
        elif self.qat:
            # Evaluation: quantize once per weight update, not once per forward.
            key = (w1._version, w2._version, w3._version, w1.data_ptr())
            if self._qcache is None or self._qcache[0] != key:
                self._qcache = (key, tuple(mxfp4.fake_quantize(w.detach()) for w in (w1, w2, w3)))
            w1, w2, w3 = self._qcache[1]
        # One view per expert through unbind: its backward stacks the gradients once, where
        # indexing w[e] would add a full-size gradient per expert.
        w1, w2, w3 = w1.unbind(0), w2.unbind(0), w3.unbind(0)
        y = torch.zeros_like(z)
        if self.training:
            self.load = torch.bincount(idx.reshape(-1), minlength=self.E).detach()
        for e in range(self.E):
            rows, slot = torch.nonzero(idx == e, as_tuple=True)
            if rows.numel() == 0:
                continue
            ze = z[rows]
            he = situ(ze @ w1[e].t(), ze @ w3[e].t(), self.beta, self.lbeta) @ w2[e].t()
            y = y.index_add(0, rows, he * ws[rows, slot].unsqueeze(-1))
        out = self.routed_expert_up_proj(self.routed_expert_norm(y))
        if self.shared_experts is not None:
            out = out + self.shared_experts(x)
        return out.reshape(shape)


class DecoderLayer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        H, eps = c["hidden"], c["rms_eps"]
        self.i, self.block, self.eps = i, c["attn_res_block"], eps
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(H, eps), RMSNorm(H, eps)
        self.self_attention_res_norm, self.self_attention_res_proj = RMSNorm(H, eps), linear(H, 1)
        self.mlp_res_norm, self.mlp_res_proj = RMSNorm(H, eps), linear(H, 1)
        self.is_mla = (i + 1) in c["mla_layers"]
        self.self_attn = MLA(c) if self.is_mla else KDA(c)
        if i < c["first_k_dense"]:
            self.mlp = SituMLP(c, H, c["dense_intermediate"])
        else:
            self.block_sparse_moe = MoE(c)

    def forward(self, h, blocks):
        """K3-SPEC section 3 steps 1-5; `blocks` is the AttnRes block list (appended to in place)."""
        prefix = h
        if blocks:
            h = mix(blocks + [prefix], self.self_attention_res_norm, self.self_attention_res_proj, self.eps)
        if self.i % self.block == 0:
            blocks.append(prefix)
            prefix = None
        a = self.self_attn(self.input_layernorm(h))
        prefix = a if prefix is None else prefix + a
        m_in = self.post_attention_layernorm(mix(blocks + [prefix], self.mlp_res_norm, self.mlp_res_proj, self.eps))
        mlp = self.mlp if hasattr(self, "mlp") else self.block_sparse_moe
        return prefix + mlp(m_in)


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, eps = c["hidden"], c["rms_eps"]
        self.embed_tokens = nn.Embedding(c["vocab"], H)
        self.layers = nn.ModuleList([DecoderLayer(c, i) for i in range(c["layers"])])
        self.norm = RMSNorm(H, eps)
        self.output_attn_res_norm, self.output_attn_res_proj = RMSNorm(H, eps), linear(H, 1)
        self.eps = eps


class K3(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Model(c)
        self.lm_head = linear(c["hidden"], c["vocab"])

    def forward(self, ids, return_layers=False):
        """ids [B, T] -> logits [B, T, vocab] (and every layer's raw output stream)."""
        m = self.model
        h = m.embed_tokens(ids)
        blocks, layers = [], []
        for layer in m.layers:
            h = layer(h, blocks)
            if return_layers:
                layers.append(h)
        out = m.norm(mix(blocks + [h], m.output_attn_res_norm, m.output_attn_res_proj, m.eps))
        logits = self.lm_head(out)
        return (logits, layers) if return_layers else logits

    def moe_layers(self):
        return [l.block_sparse_moe for l in self.model.layers if hasattr(l, "block_sparse_moe")]

    def set_qat(self, on):
        for moe in self.moe_layers():
            moe.qat = on

    def set_chunked(self, on):
        for l in self.model.layers:
            if not l.is_mla:
                l.self_attn.chunked = on


def init_weights(model, seed):
    """Deterministic initialisation from `seed` (independent of the device)."""
    c = model.config
    g = torch.Generator().manual_seed(seed)
    depth = 2 * c["layers"]
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                v = torch.ones(p.shape)
            elif name.endswith("_res_proj.weight"):
                v = torch.zeros(p.shape)  # AttnRes starts as a uniform average
            elif name.endswith("A_log"):
                v = torch.zeros(p.shape)
                v[: c["kda_heads"]] = torch.log(1 + 15 * torch.rand(c["kda_heads"], generator=g))
            elif name.endswith("dt_bias"):
                v = torch.zeros(p.shape)
            elif "conv1d" in name:
                v = torch.randn(p.shape, generator=g) * 0.5 / math.sqrt(p.shape[-1])
                v[..., -1] += 1.0  # starts near the identity on the current input
            elif name.endswith("embed_tokens.weight"):
                v = torch.randn(p.shape, generator=g)
            elif name.endswith(".w1") or name.endswith(".w3"):
                v = torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1])
            elif name.endswith(".w2"):
                v = torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]) / math.sqrt(depth)
            elif any(name.endswith(s) for s in ("o_proj.weight", "down_proj.weight", "routed_expert_up_proj.weight")):
                v = torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]) / math.sqrt(depth)
            else:
                v = torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1])
            p.copy_(v)


def count_parameters(model):
    """(spine parameters, routed expert parameters)."""
    experts = sum(m.w1.numel() + m.w2.numel() + m.w3.numel() for m in model.moe_layers())
    total = sum(p.numel() for p in model.parameters())
    return total - experts, experts
