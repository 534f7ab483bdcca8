"""The K3 on-disk format (K3-SPEC.md sections 1-2): writing a trained model, and reading one back.

BF16 spine; F32 for the KDA conv kernels, A_log, dt_bias, o_norm and the router bias (as K3 ships
them); routed experts quantized once to MXFP4 here, six U8 tensors per expert back to back;
`language_model.` names; K3's nested config.json.
"""
import json
import os

import torch

import k3_model
import mxfp4
import safetensors_io

PREFIX = "language_model."
F32_SUFFIXES = ("conv1d.weight", ".A_log", ".dt_bias", "self_attn.o_norm.weight", "e_score_correction_bias")


def is_f32(name, mla_layer):
    if name.endswith("self_attn.o_norm.weight") and mla_layer:
        return False
    return name.endswith(F32_SUFFIXES)


def layer_of(name):
    parts = name.split(".")
    return int(parts[2]) if name.startswith("model.layers.") else None


def tensors(model):
    """[(K3 name without prefix, tensor)] for the whole model, experts as MXFP4."""
    c = model.config
    out = []
    sd = model.state_dict()
    for name, t in sd.items():
        if name.endswith((".w1", ".w2", ".w3")):
            continue
        l = layer_of(name)
        mla = l is not None and (l + 1) in c["mla_layers"]
        t = t.detach().float().cpu()
        out.append((name, t if is_f32(name, mla) else t.to(torch.bfloat16)))
    for l, layer in enumerate(model.model.layers):
        if not hasattr(layer, "block_sparse_moe"):
            continue
        moe = layer.block_sparse_moe
        base = f"model.layers.{l}.block_sparse_moe.experts."
        for e in range(c["experts"]):
            for w in ("w1", "w2", "w3"):
                packed, scale = mxfp4.quantize(getattr(moe, w)[e].detach().float().cpu())
                out.append((f"{base}{e}.{w}.weight_packed", packed))
                out.append((f"{base}{e}.{w}.weight_scale", scale))
    return out


def config_json(c, info):
    n = c["bpe_ranks"]
    kda = [l for l in range(1, c["layers"] + 1) if l not in c["mla_layers"]]
    quant = {
        "config_groups": {"group_0": {
            "format": "mxfp4-pack-quantized", "input_activations": None, "output_activations": None,
            "targets": ["Linear"],
            "weights": {"group_size": 32, "num_bits": 4, "strategy": "group", "symmetric": True, "type": "float",
                        "scale_dtype": "torch.uint8"}}},
        "format": "mxfp4-pack-quantized",
        "ignore": ["re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
                   "re:.*lm_head.*", "re:.*vision_tower.*", "re:.*mm_projector.*"],
        "quant_method": "compressed-tensors", "quantization_status": "compressed"}
    text = {
        "model_type": "kimi_linear", "architectures": ["KimiLinearForCausalLM"],
        "hidden_size": c["hidden"], "num_hidden_layers": c["layers"], "vocab_size": c["vocab"],
        "max_position_embeddings": 1048576, "rms_norm_eps": c["rms_eps"], "hidden_act": "situ",
        "activation_situ_beta": c["situ_beta"], "activation_situ_linear_beta": c["situ_linear_beta"],
        "attn_res_block_size": c["attn_res_block"], "num_attention_heads": c["mla_heads"],
        "num_key_value_heads": c["mla_heads"], "q_lora_rank": c["q_lora"], "kv_lora_rank": c["kv_lora"],
        "qk_nope_head_dim": c["nope"], "qk_rope_head_dim": c["rope"], "v_head_dim": c["v_head"],
        "mla_use_nope": True, "mla_use_output_gate": True, "first_k_dense_replace": c["first_k_dense"],
        "intermediate_size": c["dense_intermediate"], "num_experts": c["experts"],
        "num_experts_per_token": c["top_k"], "num_shared_experts": c["shared_experts"],
        "moe_intermediate_size": c["moe_intermediate"], "routed_expert_hidden_size": c["latent"],
        "latent_moe_use_norm": True, "moe_layer_freq": 1, "moe_router_activation_func": "sigmoid",
        "moe_renormalize": True, "routed_scaling_factor": 1.0, "num_expert_group": 1, "topk_group": 1,
        "topk_method": "noaux_tc", "num_nextn_predict_layers": 0, "tie_word_embeddings": False,
        "bos_token_id": n, "eos_token_id": n + 2, "pad_token_id": n + 255,
        "linear_attn_config": {"num_heads": c["kda_heads"], "head_dim": c["kda_head_dim"],
                               "short_conv_kernel_size": c["conv_kernel"], "use_full_rank_gate": True,
                               "gate_lower_bound": c["gate_lower_bound"], "kda_layers": kda,
                               "full_attn_layers": list(c["mla_layers"])},
        "quantization_config": quant}
    return {"architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3",
            "bos_token_id": n, "eos_token_id": n + 2, "pad_token_id": n + 255, "tie_word_embeddings": False,
            "deltafin_trained": info, "text_config": text, "vision_config": {"mm_hidden_size": 16}}


def write(model, tok, out_dir, info):
    """The model directory: config.json, generation_config.json, shards + index, tokenizer files."""
    c = model.config
    os.makedirs(out_dir, exist_ok=True)
    ns = c["shards"]
    shard_of = lambda l: 0 if ns == 1 else l * (ns - 1) // c["layers"]
    per_shard = [[] for _ in range(ns)]
    for name, t in tensors(model):
        l = layer_of(name)
        per_shard[ns - 1 if l is None else shard_of(l)].append((PREFIX + name, t))
    weight_map, total = {}, 0
    for i, items in enumerate(per_shard):
        # Sorted names put each expert's six tensors back to back (w1, w2, w3; packed, scale).
        items.sort(key=lambda x: x[0])
        fname = f"model-{i + 1:05d}-of-{ns:06d}.safetensors"
        total += safetensors_io.write(os.path.join(out_dir, fname), items, {"format": "pt"})
        for name, _ in items:
            weight_map[name] = fname
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
        f.write("\n")
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config_json(c, info), f, indent=2, allow_nan=False)
        f.write("\n")
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        f.write('{"temperature": 1.0, "top_p": 1.0}\n')
    tok.save(out_dir)


def config_from_dir(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        j = json.load(f)
    t = j["text_config"]
    la = t["linear_attn_config"]
    info = j.get("deltafin_trained", {})
    c = dict(hidden=t["hidden_size"], layers=t["num_hidden_layers"], mla_layers=list(la["full_attn_layers"]),
             attn_res_block=t["attn_res_block_size"], kda_heads=la["num_heads"], kda_head_dim=la["head_dim"],
             conv_kernel=la["short_conv_kernel_size"], gate_lower_bound=la["gate_lower_bound"],
             mla_heads=t["num_attention_heads"], q_lora=t["q_lora_rank"], kv_lora=t["kv_lora_rank"],
             nope=t["qk_nope_head_dim"], rope=t["qk_rope_head_dim"], v_head=t["v_head_dim"],
             first_k_dense=t["first_k_dense_replace"], dense_intermediate=t["intermediate_size"],
             experts=t["num_experts"], top_k=t["num_experts_per_token"], shared_experts=t["num_shared_experts"],
             moe_intermediate=t["moe_intermediate_size"], latent=t["routed_expert_hidden_size"],
             rms_eps=t["rms_norm_eps"], situ_beta=t["activation_situ_beta"],
             situ_linear_beta=t["activation_situ_linear_beta"], vocab=t["vocab_size"],
             bpe_ranks=t["vocab_size"] - 256, shards=1, name=info.get("config", "loaded"))
    return c


def load(model_dir, dtype=torch.float64):
    """A K3 module holding exactly the stored values (BF16 widened, experts MXFP4-decoded)."""
    c = config_from_dir(model_dir)
    with open(os.path.join(model_dir, "model.safetensors.index.json")) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    stored = {}
    for fn in files:
        for name, t in safetensors_io.read(os.path.join(model_dir, fn)).items():
            if name.startswith(PREFIX):
                stored[name[len(PREFIX):]] = t
    model = k3_model.K3(c)
    sd = model.state_dict()
    new = {}
    for name, ref in sd.items():
        if name.endswith((".w1", ".w2", ".w3")):
            base, w = name.rsplit(".", 1)
            new[name] = torch.stack([mxfp4.dequantize(stored.pop(f"{base}.experts.{e}.{w}.weight_packed"),
                                                      stored.pop(f"{base}.experts.{e}.{w}.weight_scale"), dtype)
                                     for e in range(c["experts"])])
            continue
        if name not in stored:
            raise SystemExit(f"{model_dir}: tensor {PREFIX}{name} is missing")
        t = stored.pop(name)
        if list(t.shape) != list(ref.shape):
            raise SystemExit(f"{PREFIX}{name}: shape {list(t.shape)}, expected {list(ref.shape)}")
        new[name] = t.to(dtype)
    if stored:
        raise SystemExit(f"{model_dir}: unexpected tensors {sorted(stored)[:5]}")
    model.load_state_dict(new)
    return model.to(dtype)
