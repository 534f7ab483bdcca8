#!/usr/bin/python3
"""The K3 forward (K3-SPEC.md section 3) in numpy, whole sequence at once, in float32 or float64.

Written from the spec, independently of the engine (C++) and of its float64 reference
(engine/reference): it parses the safetensors shards itself. In float32 it is what a plain
BLAS fp32 program gets (every activation float32, matrix products by numpy's sgemm); in float64
it is a second float64 truth that the engine's reference must agree with to ~1e-12.

  numpy_forward.py MODEL --ids 1,2,3 [--dtype float32|float64] [--against FILE [--tensor NAME]]
                   [--out FILE.npy]

--against reads a safetensors file (e.g. `deltafin logits --reference --out FILE`) and prints
the relative L2 distance of this forward's logits from its tensor (default reference_logits)
and the share of positions whose argmax agrees. Needs only numpy (Debian: python3-numpy).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float64)


def read_safetensors(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        a, b = info['data_offsets']
        raw = np.frombuffer(data[a:b], dtype=np.uint8)
        dt = info['dtype']
        if dt == 'BF16':
            arr = (raw.view('<u2').astype(np.uint32) << 16).view(np.float32)
        elif dt == 'F32':
            arr = raw.view('<f4')
        elif dt == 'F64':
            arr = raw.view('<f8')
        elif dt == 'U8':
            arr = raw
        elif dt == 'I64':
            arr = raw.view('<i8')
        elif dt == 'I32':
            arr = raw.view('<i4')
        else:
            raise SystemExit(f'{path}: tensor {name} has dtype {dt}, not handled here')
        out[name] = arr.reshape(info['shape'])
    return out


class Checkpoint:
    def __init__(self, root):
        cfg = json.load(open(os.path.join(root, 'config.json')))
        self.cfg = cfg.get('text_config', cfg)
        idx = json.load(open(os.path.join(root, 'model.safetensors.index.json')))
        self.t = {}
        for shard in sorted(set(idx['weight_map'].values())):
            self.t.update(read_safetensors(os.path.join(root, shard)))
        self.prefix = 'language_model.' if 'language_model.model.embed_tokens.weight' in self.t else ''

    def __call__(self, name):
        return self.t[self.prefix + name]


class Forward:
    def __init__(self, ck, dt):
        self.ck, self.c, self.dt = ck, ck.cfg, dt
        self.eps = dt(self.c['rms_norm_eps'])
        self.cache = {}

    def w(self, name):
        if name not in self.cache:
            self.cache[name] = np.ascontiguousarray(self.ck(name).astype(self.dt))
        return self.cache[name]

    def lin(self, name, x):  # x [T, in] -> [T, out]
        return x @ self.w(name).T

    def mxfp4(self, base, part, x):
        key = base + part
        if key not in self.cache:
            packed = self.ck(base + part + '.weight_packed')
            scale = self.ck(base + part + '.weight_scale')
            if (scale == 255).any():
                raise SystemExit(f'{key}: NaN scale')
            codes = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.uint8)
            codes[:, 0::2] = packed & 15
            codes[:, 1::2] = packed >> 4
            vals = E2M1[codes] * np.repeat(np.ldexp(1.0, scale.astype(np.int64) - 127), 32, axis=1)
            self.cache[key] = vals.astype(self.dt)
        return x @ self.cache[key].T

    def rmsnorm(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def sigmoid(self, x):
        one = self.dt(1)
        return one / (one + np.exp(-x))

    def situ(self, g, u):
        b, lb = self.dt(self.c['activation_situ_beta']), self.dt(self.c['activation_situ_linear_beta'])
        return b * np.tanh(g / b) * self.sigmoid(g) * (lb * np.tanh(u / lb))

    def mix(self, entries, base):
        w = self.w(base + '_norm.weight') * self.w(base + '_proj.weight')[0]
        V = np.stack(entries)  # [n, T, H]
        score = (V / np.sqrt(np.mean(V * V, axis=-1, keepdims=True) + self.eps)) @ w  # [n, T]
        p = np.exp(score - score.max(axis=0, keepdims=True))
        p = p / p.sum(axis=0, keepdims=True)
        return np.einsum('nt,nth->th', p, V)

    def kda(self, p, x):
        la = self.c['linear_attn_config']
        nh, d, K = la['num_heads'], la['head_dim'], la['short_conv_kernel_size']
        T = x.shape[0]
        outs = []
        for name in ('q', 'k', 'v'):
            raw = self.lin(p + name + '_proj.weight', x)  # [T, C]
            cw = self.w(p + name + '_conv1d.weight')[:, 0, :]  # [C, K], oldest tap first
            pad = np.concatenate([np.zeros((K - 1, raw.shape[1]), self.dt), raw])
            conv = sum(pad[j:j + T] * cw[:, j] for j in range(K))
            outs.append(conv * self.sigmoid(conv))
        q, k, v = (o.reshape(T, nh, d) for o in outs)
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + self.dt(1e-6)) * self.dt(d ** -0.5)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + self.dt(1e-6))
        z = self.lin(p + 'f_b_proj.weight', self.lin(p + 'f_a_proj.weight', x)) + self.w(p + 'dt_bias')
        a_log = self.w(p + 'A_log').reshape(-1)[:nh]
        log_alpha = self.dt(la['gate_lower_bound']) * self.sigmoid(np.exp(a_log)[None, :, None] * z.reshape(T, nh, d))
        alpha = np.exp(log_alpha)
        beta = self.sigmoid(self.lin(p + 'b_proj.weight', x))  # [T, nh]
        S = np.zeros((nh, d, d), self.dt)  # [head][key][value]
        o = np.empty((T, nh, d), self.dt)
        for t in range(T):
            S = S * alpha[t][:, :, None]
            ks = np.einsum('hi,hij->hj', k[t], S)
            u = beta[t][:, None] * (v[t] - ks)
            S = S + k[t][:, :, None] * u[:, None, :]
            o[t] = np.einsum('hi,hij->hj', q[t], S)
        o = self.rmsnorm(o, self.w(p + 'o_norm.weight'))
        o = o * self.sigmoid(self.lin(p + 'g_proj.weight', x)).reshape(T, nh, d)
        return self.lin(p + 'o_proj.weight', o.reshape(T, nh * d))

    def mla(self, p, x):
        c = self.c
        nh, N, P, R, Vd = c['num_attention_heads'], c['qk_nope_head_dim'], c['qk_rope_head_dim'], c['kv_lora_rank'], c['v_head_dim']
        T = x.shape[0]
        q = self.lin(p + 'q_b_proj.weight', self.rmsnorm(self.lin(p + 'q_a_proj.weight', x), self.w(p + 'q_a_layernorm.weight')))
        q = q.reshape(T, nh, N + P)
        ckv = self.lin(p + 'kv_a_proj_with_mqa.weight', x)
        kv = self.lin(p + 'kv_b_proj.weight', self.rmsnorm(ckv[:, :R], self.w(p + 'kv_a_layernorm.weight'))).reshape(T, nh, N + Vd)
        kn, v, kr = kv[:, :, :N], kv[:, :, N:], ckv[:, R:]
        score = (np.einsum('thn,shn->hts', q[:, :, :N], kn) + np.einsum('thp,sp->hts', q[:, :, N:], kr)) * self.dt((N + P) ** -0.5)
        score = np.where(np.tril(np.ones((T, T), bool))[None], score, -np.inf)
        pr = np.exp(score - score.max(-1, keepdims=True))
        pr = pr / pr.sum(-1, keepdims=True)
        attn = np.einsum('hts,shv->thv', pr, v).reshape(T, nh * Vd)
        if c.get('mla_use_output_gate', True):
            attn = attn * self.sigmoid(self.lin(p + 'g_proj.weight', x))
        return self.lin(p + 'o_proj.weight', attn)

    def dense(self, p, x):
        return self.lin(p + '.down_proj.weight', self.situ(self.lin(p + '.gate_proj.weight', x), self.lin(p + '.up_proj.weight', x)))

    def moe(self, p, x):
        c = self.c
        E, k = c['num_experts'], c['num_experts_per_token']
        s = self.sigmoid(self.lin(p + 'gate.weight', x))  # [T, E]
        key = s + self.w(p + 'gate.e_score_correction_bias')
        z = self.lin(p + 'routed_expert_down_proj.weight', x)
        y = np.zeros_like(z)
        for t in range(x.shape[0]):
            chosen = sorted(np.argsort(-key[t], kind='stable')[:k])
            tot = s[t, chosen].sum()
            for e in chosen:
                wt = s[t, e] / (tot + self.dt(1e-20)) if c.get('moe_renormalize', True) else s[t, e]
                wt = wt * self.dt(c.get('routed_scaling_factor', 1.0))
                b = f'{p}experts.{e}.'
                zt = z[t:t + 1]
                h = self.situ(self.mxfp4(b, 'w1', zt), self.mxfp4(b, 'w3', zt))
                y[t] += wt * self.mxfp4(b, 'w2', h)[0]
        if c.get('latent_moe_use_norm', True):
            y = self.rmsnorm(y, self.w(p + 'routed_expert_norm.weight'))
        out = self.lin(p + 'routed_expert_up_proj.weight', y)
        if c.get('num_shared_experts', 0) > 0:
            out = out + self.dense(p + 'shared_experts', x)
        return out

    def logits(self, ids):
        c = self.c
        B = c['attn_res_block_size']
        mla_layers = set(c['linear_attn_config']['full_attn_layers'])
        h = self.w('model.embed_tokens.weight')[np.array(ids)]
        blocks = []
        for i in range(c['num_hidden_layers']):
            p = f'model.layers.{i}.'
            prefix = h
            if blocks:
                h = self.mix(blocks + [prefix], p + 'self_attention_res')
            if i % B == 0:
                blocks.append(prefix)
                prefix = None
            x = self.rmsnorm(h, self.w(p + 'input_layernorm.weight'))
            a = self.mla(p + 'self_attn.', x) if (i + 1) in mla_layers else self.kda(p + 'self_attn.', x)
            prefix = a if prefix is None else prefix + a
            xm = self.rmsnorm(self.mix(blocks + [prefix], p + 'mlp_res'), self.w(p + 'post_attention_layernorm.weight'))
            m = self.moe(p + 'block_sparse_moe.', xm) if i >= c['first_k_dense_replace'] else self.dense(p + 'mlp', xm)
            h = prefix + m
        out = self.rmsnorm(self.mix(blocks + [h], 'model.output_attn_res'), self.w('model.norm.weight'))
        return self.lin('lm_head.weight', out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('model')
    ap.add_argument('--ids', required=True, help='token ids, comma separated')
    ap.add_argument('--dtype', default='float32', choices=['float32', 'float64'])
    ap.add_argument('--against', help='safetensors file holding the logits to compare with')
    ap.add_argument('--tensor', default='reference_logits')
    ap.add_argument('--out', help='write the logits here (.npy)')
    a = ap.parse_args()
    ids = [int(s) for s in a.ids.split(',')]
    logits = Forward(Checkpoint(a.model), getattr(np, a.dtype)).logits(ids)
    if a.out:
        np.save(a.out, logits)
    if a.against:
        ref = read_safetensors(a.against)[a.tensor].astype(np.float64)
        got = logits.astype(np.float64)
        rel = np.sqrt(((got - ref) ** 2).sum() / (ref ** 2).sum())
        agree = (got.argmax(-1) == ref.argmax(-1)).mean()
        print(json.dumps({'dtype': a.dtype, 'rel_l2': rel, 'argmax_agree': agree, 'positions': len(ids)}))


if __name__ == '__main__':
    sys.exit(main())
