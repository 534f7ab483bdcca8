#!/usr/bin/env python3
"""Train a small Kimi K3 and export it in K3's exact on-disk format (see README.md).

  k3train.py prepare --config demo --data DIR [--text FILE]   corpus, BPE tokenizer, token stream
  k3train.py train   --config demo --data DIR --ckpt FILE       train (seeded), checkpoint
  k3train.py export  --ckpt FILE --data DIR --out MODEL_DIR     write the K3 checkpoint
  k3train.py all     --config demo --work DIR --out MODEL_DIR   the three above in order
  k3train.py logits  --model MODEL_DIR --ids 1,2,3 --out F      float64 forward on the exported files
  k3train.py sample  --model MODEL_DIR --prompt Hello           greedy text from the exported files
  k3train.py dspark   --target MODEL_DIR --data DIR --out DRAFT_DIR   train a DSpark drafter on the target
  k3train.py dspark-logits --target MODEL_DIR --draft DRAFT_DIR --prompt TEXT --out F
  k3train.py check-fixtures                                      this forward vs tests/fixtures goldens
  k3train.py selftest                                            chunked KDA == recurrent, MXFP4 round trip
"""
import argparse
import json
import math
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpe  # noqa: E402
import configs  # noqa: E402
import corpus  # noqa: E402
import dspark  # noqa: E402
import export  # noqa: E402
import k3_model  # noqa: E402
import mxfp4  # noqa: E402
import safetensors_io  # noqa: E402


def log(msg):
    print(f"[k3train {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- prepare

def prepare(args, c):
    os.makedirs(args.data, exist_ok=True)
    if args.text:
        with open(args.text, encoding="utf-8", errors="replace") as f:
            raw = corpus.ascii_fold(f.read())
        docs = [p.strip() + "\n" for p in raw.split("\n\n") if p.strip()]
        pairs = []
        source = f"text file {os.path.basename(args.text)}"
    else:
        verses = corpus.read_kjv(args.kjv)
        docs = corpus.chapters(verses)
        pairs = corpus.chat_pairs(verses, c["chat_pairs"], args.seed)
        source = "King James Bible (Debian bible-kjv-text)"
    log(f"{len(docs)} documents, {sum(map(len, docs))} characters, {len(pairs)} chat pairs from the {source}")
    chat_text = [q + "\n" + r + "\n" + a + "\n" for q, r, a in pairs]
    vocab = bpe.train(docs + chat_text, c["bpe_ranks"], log)
    if len(vocab) != c["bpe_ranks"]:
        raise SystemExit(f"the corpus supports only {len(vocab)} BPE ranks; lower bpe_ranks")
    tok = bpe.Tokenizer(vocab)
    tok_dir = os.path.join(args.data, "tokenizer")
    os.makedirs(tok_dir, exist_ok=True)
    tok.save(tok_dir)
    bos = tok.special("[BOS]")
    # Every 40th document is held out for the validation loss.
    train_ids, val_ids = [], []
    for i, d in enumerate(docs):
        (val_ids if i % 40 == 39 else train_ids).extend([bos] + tok.encode(d))
    r = corpus.ChatRenderer(tok)
    chats = []
    for i, (q, reason, a) in enumerate(pairs):
        thinking = i % 2 == 0
        chats.append(r.prompt(q, thinking) + r.completion(reason, a, thinking))
    chat_ids = [t for ch in chats for t in ch]
    with open(os.path.join(args.data, "chat.json"), "w") as f:
        json.dump([{"user": q, "reasoning": reason, "answer": a} for q, reason, a in pairs], f, indent=1)
    torch.save({"train": torch.tensor(train_ids, dtype=torch.int32), "val": torch.tensor(val_ids, dtype=torch.int32),
                "chat": torch.tensor(chat_ids, dtype=torch.int32), "source": source,
                "bpe_ranks": c["bpe_ranks"]}, os.path.join(args.data, "tokens.pt"))
    log(f"tokens: train {len(train_ids)}, validation {len(val_ids)}, chat {len(chat_ids)} -> {args.data}")


# ---------------------------------------------------------------- train

class Batches:
    """Random windows of seq+1 tokens: from the text stream, and with probability chat_share from the
    chat stream (chat turns are a small corpus, so they are seen many times)."""

    def __init__(self, data, c, seed, device):
        self.train, self.chat = data["train"].long(), data["chat"].long()
        self.seq, self.batch, self.device = c["seq"], c["batch"], device
        self.g = torch.Generator().manual_seed(seed)
        self.chat_share = c["chat_share"] if len(self.chat) > self.seq + 1 else 0.0

    def next(self):
        rows = []
        for _ in range(self.batch):
            src = self.chat if torch.rand(1, generator=self.g).item() < self.chat_share else self.train
            i = torch.randint(0, len(src) - self.seq - 1, (1,), generator=self.g).item()
            rows.append(src[i:i + self.seq + 1])
        x = torch.stack(rows).to(self.device)
        return x[:, :-1], x[:, 1:]


def lr_at(c, progress, step):
    if step < c["warmup"]:
        return c["lr"] * (step + 1) / c["warmup"]
    return c["lr"] * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


@torch.no_grad()
def val_loss(model, data, c, device, n=8):
    val = data["val"].long()
    if len(val) < c["seq"] + 2:
        return float("nan")
    model.eval()
    losses = []
    step = max(1, (len(val) - c["seq"] - 1) // n)
    for i in range(0, min(n * step, len(val) - c["seq"] - 1), step):
        x = val[i:i + c["seq"] + 1].to(device).unsqueeze(0)
        logits = model(x[:, :-1])
        losses.append(torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1)).item())
    model.train()
    return sum(losses) / len(losses)


def train(args, c):
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    if args.threads:
        torch.set_num_threads(args.threads)
    data = torch.load(os.path.join(args.data, "tokens.pt"))
    if data["bpe_ranks"] != c["bpe_ranks"]:
        raise SystemExit(f"{args.data} was prepared for {data['bpe_ranks']} BPE ranks, the config has {c['bpe_ranks']}")
    model = k3_model.K3(c)
    k3_model.init_weights(model, args.seed)
    model.to(device).train()
    spine, experts = k3_model.count_parameters(model)
    log(f"config {c['name']}: {spine / 1e6:.2f}M spine + {experts / 1e6:.2f}M routed expert parameters "
        f"(~{(spine * 2 + experts * 17 / 32) / 1e6:.1f} MB exported), device {device}, {data['source']}")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    other = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=c["lr"], betas=(0.9, 0.95), eps=1e-8)
    batches = Batches(data, c, args.seed, device)
    steps, limit = c["steps"], args.minutes * 60 if args.minutes else None
    t0 = time.time()
    history = []
    qat_on = False
    step = 0
    for step in range(steps):
        elapsed = time.time() - t0
        progress = max(step / steps, elapsed / limit if limit else 0.0)
        if progress >= 1.0:
            break
        if not qat_on and progress >= 1.0 - c["qat_fraction"]:
            model.set_qat(True)
            qat_on = True
            log(f"step {step}: training on MXFP4-rounded experts from here on")
        for g in opt.param_groups:
            g["lr"] = lr_at(c, progress, step)
        x, y = batches.next()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        # Aux-loss-free balancing: raise the bias of under-used experts, lower the over-used.
        with torch.no_grad():
            for moe in model.moe_layers():
                load = moe.load.float()
                moe.gate.e_score_correction_bias += 1e-3 * torch.sign(load.mean() - load)
        history.append(loss.item())
        if step % args.log_every == 0 or step == steps - 1:
            recent = history[-args.log_every:]
            log(f"step {step} loss {sum(recent) / len(recent):.4f} lr {lr_at(c, progress, step):.2e} "
                f"{(step + 1) * c['batch'] * c['seq'] / max(time.time() - t0, 1e-9):.0f} tok/s")
        if args.eval_every and step and step % args.eval_every == 0:
            log(f"step {step} validation loss {val_loss(model, data, c, device):.4f}")
            save_ckpt(args.ckpt, model, c, step, history, args.seed, time.time() - t0)
    if not qat_on:
        model.set_qat(True)
    vl = val_loss(model, data, c, device)
    log(f"done after {step + 1} steps, {time.time() - t0:.0f} s; validation loss {vl:.4f} (MXFP4 experts)")
    save_ckpt(args.ckpt, model, c, step + 1, history, args.seed, time.time() - t0, vl)


def save_ckpt(path, model, c, step, history, seed, seconds, val=None):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    torch.save({"config": c, "state": state, "step": step, "seed": seed, "seconds": seconds, "val_loss": val,
                "loss_tail": history[-200:]}, path + ".tmp")
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------- export / check

def do_export(args):
    ck = torch.load(args.ckpt)
    c = ck["config"]
    model = k3_model.K3(c)
    model.load_state_dict(ck["state"])
    tok = bpe.Tokenizer.load(os.path.join(args.data, "tokenizer"))
    if tok.n != c["bpe_ranks"]:
        raise SystemExit("the tokenizer in --data does not match the checkpoint's vocabulary")
    data_source = torch.load(os.path.join(args.data, "tokens.pt"))["source"]
    info = {"config": c["name"], "seed": ck["seed"], "steps": ck["step"], "train_seconds": round(ck["seconds"]),
            "validation_loss": None if ck["val_loss"] is None or math.isnan(ck["val_loss"]) else round(ck["val_loss"], 4), "data": data_source,
            "note": "trained by tools/train/k3train.py; a tiny demo model, not Kimi K3"}
    export.write(model, tok, args.out, info)
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    log(f"exported to {args.out}: {size / 1e6:.2f} MB")


def parse_ids(s):
    return [int(x) for x in s.split(",") if x.strip()]


@torch.no_grad()
def do_logits(args):
    """float64 forward on the exported files (BF16 widened, MXFP4 decoded): every position's logits
    and every layer's output stream, stored F32, for prompts given as text (encoded by this script's
    tokenizer), as chat turns (rendered by this script, thinking on and off) or as raw ids. A JSON
    sidecar (<out>.json) lists the prompts with their texts."""
    model = export.load(args.model, torch.float64)
    model.eval()
    tok = bpe.Tokenizer.load(args.model)
    r = corpus.ChatRenderer(tok)
    prompts = [(dict(kind="text", text=t), [tok.special("[BOS]")] + tok.encode(t)) for t in args.prompt or []]
    for u in args.chat or []:
        prompts.append((dict(kind="chat", user=u, thinking=True), r.prompt(u, True)))
        prompts.append((dict(kind="chat", user=u, thinking=False), r.prompt(u, False)))
    prompts += [(dict(kind="ids"), parse_ids(s)) for s in args.ids or []]
    out, meta = {}, []
    for i, (info, ids) in enumerate(prompts):
        logits, layers = model(torch.tensor([ids], dtype=torch.long), return_layers=True)
        out[f"prompt.{i}.ids"] = torch.tensor(ids, dtype=torch.int64)
        out[f"prompt.{i}.logits"] = logits[0].float()
        out[f"prompt.{i}.layer_out"] = torch.stack([l[0] for l in layers]).float()
        top2 = logits[0].topk(2, dim=-1).values
        meta.append(dict(index=i, tokens=len(ids), min_top2_margin=float((top2[:, 0] - top2[:, 1]).min()), **info))
    safetensors_io.write(args.out, sorted(out.items()), {"producer": "tools/train/k3train.py logits"})
    with open(args.out + ".json", "w") as f:
        json.dump({"model": os.path.basename(os.path.normpath(args.model)),
                   "oracle": "tools/train/k3train.py logits: the training script's K3 forward in float64 on the "
                             "exported files (BF16 widened, MXFP4 experts decoded), recurrent KDA",
                   "layout": {"prompt.N.ids": "int64 [T]", "prompt.N.logits": "float32 [T, vocab]",
                              "prompt.N.layer_out": "float32 [layers, T, hidden]: each layer's raw output stream"},
                   "prompts": meta}, f, indent=1)
        f.write("\n")
    log(f"wrote {len(prompts)} prompts' logits to {args.out} (+ .json)")


@torch.no_grad()
def generate(model, ids, n, stop=None):
    out = []
    x = torch.tensor([ids], dtype=torch.long)
    for _ in range(n):
        nxt = int(model(x)[0, -1].argmax())
        out.append(nxt)
        if stop is not None and nxt == stop:
            break
        x = torch.cat([x, torch.tensor([[nxt]])], 1)
    return out


def do_sample(args):
    model = export.load(args.model, torch.float32)
    model.eval()
    tok = bpe.Tokenizer.load(args.model)
    r = corpus.ChatRenderer(tok)
    words = set()
    if os.path.exists("/usr/share/dict/words"):
        with open("/usr/share/dict/words", encoding="utf-8", errors="replace") as f:
            words = {w.strip().lower() for w in f}
    total = known = 0
    for p in args.prompt:
        ids = r.prompt(p, args.think) if args.chat else [tok.special("[BOS]")] + tok.encode(p)
        out = generate(model, ids, args.max_new, tok.special("<|end_of_msg|>"))
        text = tok.decode(out)
        print(f"--- {p!r}\n{text}\n", flush=True)
        plain = "".join(ch if ch.isalpha() or ch == "'" else " " for ch in tok.decode([i for i in out if i < tok.n]))
        for w in plain.split():
            total += 1
            known += w.lower().strip("'") in words
    if words and total:
        print(f"dictionary words: {known} of {total} ({100 * known / total:.0f}%, /usr/share/dict/words)")


# ---------------------------------------------------------------- DSpark drafter

def load_target(path, device, dtype=torch.float32):
    target = export.load(path, dtype).to(device).eval()
    for p in target.parameters():
        p.requires_grad_(False)
    return target


def draft_batch(target, d, x, anchors):
    """Taps and labels from the frozen target: the label of block row k is the target's greedy
    next token at position p+k (what verification would accept), the Markov head's previous token
    is the anchor, then the labels before it."""
    with torch.no_grad():
        logits, layers = target(x, return_layers=True)
        greedy = logits.argmax(-1)
    taps = [layers[l] for l in d.config["target_layer_ids"]]
    T = d.config["block_size"]
    k = torch.arange(T, device=x.device)
    lab = greedy.gather(1, (anchors.unsqueeze(-1) + k).reshape(x.shape[0], -1)).reshape(*anchors.shape, T)
    prev = torch.cat([x.gather(1, anchors).unsqueeze(-1), lab[..., :-1]], -1)
    return taps, lab, prev


def do_dspark(args):
    torch.manual_seed(args.seed)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if args.threads:
        torch.set_num_threads(args.threads)
    target = load_target(args.target, device)
    tc = target.config
    c = dspark.default_config(tc, tc["vocab"])
    for o in args.set:
        k, _, v = o.partition("=")
        if k not in c:
            raise SystemExit(f"unknown drafter field '{k}'")
        c[k] = [int(t) for t in v.split("+")] if k == "target_layer_ids" else type(c[k])(v)
    model = dspark.DSpark(c)
    dspark.init_weights(model, args.seed)
    model.to(device).train()
    n = sum(p.numel() for p in model.parameters())
    log(f"DSpark drafter: {n / 1e6:.2f}M parameters, taps {c['target_layer_ids']}, block {c['block_size']}, device {device}")
    data = torch.load(os.path.join(args.data, "tokens.pt"))
    train_ids, val_ids = data["train"].long(), data["val"].long()
    S, B, m, T = args.seq, args.batch, args.anchors, c["block_size"]
    g = torch.Generator().manual_seed(args.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01)

    def windows(src, gen):
        i = torch.randint(0, len(src) - S, (B,), generator=gen)
        return torch.stack([src[j:j + S] for j in i.tolist()]).to(device)

    def anchors_for(gen):
        return torch.randint(1, S - T, (B, m), generator=gen).to(device)

    t0 = time.time()
    for step in range(args.steps):
        progress = max(step / args.steps, (time.time() - t0) / (args.minutes * 60) if args.minutes else 0.0)
        if progress >= 1:
            break
        for grp in opt.param_groups:
            grp["lr"] = args.lr * min(1.0, (step + 1) / 50) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
        x = windows(train_ids, g)
        an = anchors_for(g)
        taps, lab, prev = draft_batch(target, model, x, an)
        U = model.base_logits(target, taps, x, an)
        logits = U + model.markov_head.bias(prev)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % args.log_every == 0:
            log(f"dspark step {step} loss {loss.item():.4f}")
    acc = draft_accuracy(target, model, val_ids if len(val_ids) > S + 1 else train_ids, S, B, m, device, args.seed)
    log(f"dspark done after {step + 1} steps, {time.time() - t0:.0f} s; teacher-forced accuracy per block row "
        f"{[round(a, 3) for a in acc]}")
    info = {"target": os.path.basename(os.path.normpath(args.target)), "seed": args.seed, "steps": step + 1,
            "train_seconds": round(time.time() - t0), "row_accuracy": [round(a, 4) for a in acc],
            "note": "trained by tools/train/k3train.py dspark on the target's own hidden states"}
    dspark.write(model.cpu(), target.cpu(), args.out, info)
    log(f"exported the drafter to {args.out}")


@torch.no_grad()
def draft_accuracy(target, model, ids, S, B, m, device, seed):
    """Per block row: how often the Markov-head chain (fed its own drafts) equals the target's greedy
    labels, given every earlier row matched: an estimate of DSpark acceptance."""
    model.eval()
    gen = torch.Generator().manual_seed(seed + 1)
    T = model.config["block_size"]
    hit, alive = torch.zeros(T), torch.zeros(T)
    for _ in range(4):
        i = torch.randint(0, len(ids) - S, (B,), generator=gen)
        x = torch.stack([ids[j:j + S] for j in i.tolist()]).to(device)
        an = torch.randint(1, S - T, (B, m), generator=gen).to(device)
        taps, lab, _ = draft_batch(target, model, x, an)
        U = model.base_logits(target, taps, x, an)
        prev = x.gather(1, an)
        ok = torch.ones_like(prev, dtype=torch.bool)
        for k in range(T):
            d = (U[:, :, k] + model.markov_head.bias(prev)).argmax(-1)
            alive[k] += ok.sum().item()
            ok = ok & (d == lab[:, :, k])
            hit[k] += ok.sum().item()
            prev = d
    model.train()
    return (hit / alive.clamp(min=1)).tolist()


@torch.no_grad()
def do_dspark_logits(args):
    """Base logits and drafts of the exported drafter (float64) for anchors inside text prompts."""
    target = load_target(args.target, "cpu", torch.float64)
    d = dspark.load(args.draft, torch.float64).eval()
    tok = bpe.Tokenizer.load(args.target)
    out, meta = {}, []
    for i, text in enumerate(args.prompt):
        ids = [tok.special("[BOS]")] + tok.encode(text)
        for p in sorted({len(ids) - 1, max(1, len(ids) // 2)}):
            x = torch.tensor([ids[:p + 1]])
            _, layers = target(x, return_layers=True)
            U = d.base_logits(target, [layers[l] for l in d.config["target_layer_ids"]], x, torch.tensor([[p]]))[0, 0]
            n = len(meta)
            out[f"case.{n}.context_ids"] = torch.tensor(ids[:p], dtype=torch.int64)
            out[f"case.{n}.anchor"] = torch.tensor([ids[p], p], dtype=torch.int64)
            out[f"case.{n}.base_logits"] = U.float()
            margins = []
            drafts = d.drafts(U, ids[p], margins)
            out[f"case.{n}.drafts"] = torch.tensor(drafts, dtype=torch.int64)
            out[f"case.{n}.margins"] = torch.tensor(margins, dtype=torch.float32)
            meta.append({"index": n, "prompt": text, "anchor_position": p, "drafts": drafts, "margins": margins})
    safetensors_io.write(args.out, sorted(out.items()), {"producer": "tools/train/k3train.py dspark-logits"})
    with open(args.out + ".json", "w") as f:
        json.dump({"oracle": "tools/train/dspark.py in float64 on the exported drafter and target; taps from "
                             "tools/train/k3_model.py",
                   "layout": {"case.N.context_ids": "int64 [N]: positions 0..N-1", "case.N.anchor": "int64 [2]: id, position",
                              "case.N.base_logits": "float32 [T, vocab]: before the Markov bias",
                              "case.N.drafts / margins": "drafts after the Markov head, top1 - top2 of each step"},
                   "cases": meta}, f, indent=1)
        f.write("\n")
    log(f"wrote {len(meta)} drafter cases to {args.out}")


@torch.no_grad()
def do_check_fixtures(args):
    """This script's K3 and DSpark forwards against the golden fixtures of Moonshot's code
    (tests/fixtures/k3-tiny) and of the DSpark reference (tests/fixtures/dspark-tiny)."""
    fx = args.fixtures
    tgt = export.load(os.path.join(fx, "k3-tiny"), torch.float64).eval()
    g = safetensors_io.read(os.path.join(fx, "k3-tiny", "golden.safetensors"))
    worst = 0.0
    i = 0
    while f"prompt.{i}.ids" in g:
        lg = tgt(g[f"prompt.{i}.ids"].long().unsqueeze(0))[0]
        want = g[f"prompt.{i}.logits"].double()
        rel = ((lg - want).norm() / want.norm()).item()
        worst = max(worst, rel)
        print(f"k3-tiny prompt {i}: logits rel-L2 {rel:.3g} against Moonshot's fp32 forward")
        i += 1
    d = dspark.load(os.path.join(fx, "dspark-tiny"), torch.float64).eval()
    dg = safetensors_io.read(os.path.join(fx, "dspark-tiny", "golden.safetensors"))
    same = True
    i = 0
    while f"case.{i}.anchor" in dg:
        anchor, p = dg[f"case.{i}.anchor"].tolist()
        x = torch.cat([dg[f"case.{i}.context_ids"].long(), torch.tensor([anchor])]).unsqueeze(0)
        _, layers = tgt(x, return_layers=True)
        U = d.base_logits(tgt, [layers[l] for l in d.config["target_layer_ids"]], x, torch.tensor([[p]]))[0, 0]
        want = dg[f"case.{i}.base_logits"].double()
        rel = ((U - want).norm() / want.norm()).item()
        drafts = d.drafts(U, anchor)
        same &= drafts == dg[f"case.{i}.drafts"].tolist()
        print(f"dspark-tiny case {i}: base logits rel-L2 {rel:.3g}, drafts {'equal' if drafts == dg[f'case.{i}.drafts'].tolist() else 'DIFFER'}")
        worst = max(worst, rel)
        i += 1
    if worst > 5e-4 or not same:
        raise SystemExit("check-fixtures: outside the golden tolerance")
    print("check-fixtures passed")


def do_selftest(_args):
    torch.manual_seed(0)
    B, T, h, d = 2, 37, 3, 8
    q = torch.nn.functional.normalize(torch.randn(B, T, h, d, dtype=torch.float64), dim=-1) * d ** -0.5
    k = torch.nn.functional.normalize(torch.randn(B, T, h, d, dtype=torch.float64), dim=-1)
    v = torch.randn(B, T, h, d, dtype=torch.float64)
    alpha = torch.exp(-5 * torch.rand(B, T, h, d, dtype=torch.float64))
    beta = torch.rand(B, T, h, dtype=torch.float64)
    ref, _ = k3_model.kda_recurrent(q, k, v, alpha, beta)
    chk = k3_model.kda_chunked(q, k, v, alpha, beta, chunk=8)
    err = (ref - chk).abs().max().item()
    print(f"chunked KDA vs recurrent: max abs difference {err:.3g}")
    w = torch.randn(16, 64) * 0.3
    p, s = mxfp4.quantize(w)
    dq = mxfp4.dequantize(p, s)
    again = mxfp4.dequantize(*mxfp4.quantize(dq))
    print(f"MXFP4: max relative error {((dq - w).abs().max() / w.abs().max()).item():.3g}, "
          f"re-quantizing decoded values is exact: {bool(torch.equal(dq, again))}")
    assert err < 1e-10 and torch.equal(dq, again)
    print("selftest passed")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p, need_config=True):
        if need_config:
            p.add_argument("--config", default="demo", help="test, cpu or demo (configs.py)")
            p.add_argument("--set", action="append", default=[], help="field=value override, e.g. steps=100")
        p.add_argument("--seed", type=int, default=1)

    p = sub.add_parser("prepare")
    common(p)
    p.add_argument("--data", required=True)
    p.add_argument("--text", help="train on this text file instead of the KJV (no chat turns)")
    p.add_argument("--kjv", help="a dump of `bible -f gen1:1-rev22:21` instead of running `bible`")
    for name in ("train", "all"):
        p = sub.add_parser(name)
        common(p)
        if name == "train":
            p.add_argument("--data", required=True)
            p.add_argument("--ckpt", required=True)
        else:
            p.add_argument("--work", required=True, help="folder for data/ and checkpoint.pt")
            p.add_argument("--out", required=True)
            p.add_argument("--text")
            p.add_argument("--kjv")
        p.add_argument("--device", help="cpu or cuda (default: cuda when available)")
        p.add_argument("--threads", type=int, default=0)
        p.add_argument("--minutes", type=float, default=0, help="stop after this long (the schedule follows)")
        p.add_argument("--log-every", type=int, default=50)
        p.add_argument("--eval-every", type=int, default=500)
    p = sub.add_parser("export")
    p.add_argument("--ckpt", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("logits")
    p.add_argument("--model", required=True)
    p.add_argument("--prompt", action="append", help="a text prompt ([BOS] + its ids); repeatable")
    p.add_argument("--chat", action="append", help="a user message, rendered as a chat prompt; repeatable")
    p.add_argument("--ids", action="append", help="comma-separated ids; repeatable")
    p.add_argument("--out", required=True)
    p = sub.add_parser("sample")
    p.add_argument("--model", required=True)
    p.add_argument("--prompt", action="append", required=True)
    p.add_argument("--chat", action="store_true")
    p.add_argument("--think", action="store_true")
    p.add_argument("--max-new", type=int, default=40)
    p = sub.add_parser("dspark")
    p.add_argument("--target", required=True, help="the exported K3 model folder")
    p.add_argument("--data", required=True, help="prepared data (tokens.pt) of that model")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--set", action="append", default=[], help="drafter field=value, e.g. layers=1")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--anchors", type=int, default=8, help="blocks per sequence")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--minutes", type=float, default=0)
    p.add_argument("--device")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--log-every", type=int, default=50)
    p = sub.add_parser("dspark-logits")
    p.add_argument("--target", required=True)
    p.add_argument("--draft", required=True)
    p.add_argument("--prompt", action="append", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("check-fixtures")
    p.add_argument("--fixtures", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures"))
    sub.add_parser("selftest")
    args = ap.parse_args()

    if args.cmd == "prepare":
        prepare(args, configs.make(args.config, args.set))
    elif args.cmd == "train":
        train(args, configs.make(args.config, args.set))
    elif args.cmd == "all":
        c = configs.make(args.config, args.set)
        args.data = os.path.join(args.work, "data")
        args.ckpt = os.path.join(args.work, "checkpoint.pt")
        if os.path.exists(os.path.join(args.data, "tokens.pt")):
            log(f"using the prepared data in {args.data} (delete it to prepare again)")
        else:
            prepare(args, c)
        train(args, c)
        do_export(args)
    elif args.cmd == "export":
        do_export(args)
    elif args.cmd == "logits":
        do_logits(args)
    elif args.cmd == "sample":
        do_sample(args)
    elif args.cmd == "dspark":
        do_dspark(args)
    elif args.cmd == "dspark-logits":
        do_dspark_logits(args)
    elif args.cmd == "check-fixtures":
        do_check_fixtures(args)
    elif args.cmd == "selftest":
        do_selftest(args)


if __name__ == "__main__":
    main()
