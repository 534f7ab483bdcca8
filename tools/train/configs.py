"""Model shapes and training settings. Field names follow `deltafin synth --set` (docs/SYNTH.md)."""

# chat_share: the share of training windows taken from the chat turns (the rest from the text).
COMMON = dict(conv_kernel=4, rms_eps=1e-5, situ_beta=4.0, situ_linear_beta=25.0, gate_lower_bound=-5.0,
              chat_share=0.15)

PRESETS = {
    # For the export test: trains in seconds on a CPU.
    "test": dict(hidden=64, layers=4, mla_layers=[2, 4], attn_res_block=2, kda_heads=2, kda_head_dim=32,
                 mla_heads=2, q_lora=32, kv_lora=32, nope=16, rope=8, v_head=16, first_k_dense=1,
                 dense_intermediate=128, experts=16, top_k=4, shared_experts=1, moe_intermediate=64, latent=32,
                 bpe_ranks=512, shards=2,
                 steps=12, batch=4, seq=64, lr=3e-3, warmup=2, qat_fraction=0.5, chat_pairs=0),
    # The smallest shape that might speak, for a CPU run of about 40 minutes.
    "cpu": dict(hidden=192, layers=6, mla_layers=[3, 6], attn_res_block=3, kda_heads=3, kda_head_dim=64,
                mla_heads=3, q_lora=96, kv_lora=64, nope=32, rope=16, v_head=32, first_k_dense=1,
                dense_intermediate=512, experts=16, top_k=4, shared_experts=1, moe_intermediate=128, latent=96,
                bpe_ranks=4096, shards=3,
                steps=4000, batch=8, seq=128, lr=3e-3, warmup=100, qat_fraction=0.15, chat_pairs=600),
    # The bundled demo, trained on the H200. Sized so the compressed bundle (model + drafter) stays
    # near 20 MB: the repository, fixtures included, must stay small enough to send to a GPU machine.
    "demo": dict(hidden=256, layers=8, mla_layers=[4, 8], attn_res_block=4, kda_heads=4, kda_head_dim=64,
                 mla_heads=4, q_lora=128, kv_lora=128, nope=64, rope=32, v_head=64, first_k_dense=1,
                 dense_intermediate=768, experts=32, top_k=4, shared_experts=1, moe_intermediate=128, latent=128,
                 bpe_ranks=4096, shards=3,
                 steps=4000, batch=32, seq=256, lr=2e-3, warmup=200, qat_fraction=0.15, chat_pairs=3000,
                 chat_share=0.35),
    # The first H200 demo (2026-12-05): 14.8M spine + 24.8M routed expert parameters, 42.8 MB exported.
    "demo-large": dict(hidden=384, layers=8, mla_layers=[4, 8], attn_res_block=4, kda_heads=6, kda_head_dim=64,
                       mla_heads=6, q_lora=192, kv_lora=128, nope=64, rope=32, v_head=64, first_k_dense=1,
                       dense_intermediate=1024, experts=32, top_k=4, shared_experts=1, moe_intermediate=192,
                       latent=192, bpe_ranks=6144, shards=3,
                       steps=4000, batch=32, seq=256, lr=2e-3, warmup=200, qat_fraction=0.15, chat_pairs=800),
}


def make(name, overrides=()):
    if name not in PRESETS:
        raise SystemExit(f"unknown config '{name}': choose one of {', '.join(PRESETS)}")
    c = dict(COMMON)
    c.update(PRESETS[name])
    c["name"] = name
    for o in overrides:
        k, _, v = o.partition("=")
        if k not in c:
            raise SystemExit(f"unknown config field '{k}'")
        if k == "mla_layers":
            c[k] = [int(x) for x in v.split("+")]
        elif isinstance(c[k], float):
            c[k] = float(v)
        else:
            c[k] = int(v)
    check(c)
    return c


def check(c):
    c["vocab"] = c["bpe_ranks"] + 256
    for k in ("latent", "moe_intermediate"):
        if c[k] % 32:
            raise SystemExit(f"{k} must be a multiple of 32 (MXFP4 groups), not {c[k]}")
    if c["kda_heads"] > c["kda_head_dim"]:
        raise SystemExit("kda_heads must not exceed kda_head_dim (A_log is stored [head_dim])")
    if c["top_k"] > c["experts"]:
        raise SystemExit("top_k must not exceed experts")
    if any(l < 1 or l > c["layers"] for l in c["mla_layers"]):
        raise SystemExit("mla_layers are 1-based layer numbers within the model")
