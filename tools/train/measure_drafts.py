#!/usr/bin/env python3
"""Drafting on a trained model: acceptance of each drafter, and the ids with drafting equal to the
ids without, through `deltafin generate-ids` (greedy), on raw and chat prompts.

  measure_drafts.py --deltafin build/ci-cpu/bin/deltafin --model MODEL_DIR [--dspark DRAFT_DIR] [--qwen QWEN_DIR]
                    [--max-new 48] [--repeat 3] [--markdown]

Speed-up is the decode time without drafting over the decode time with it (the engine's own
`decode_seconds`, prefill excluded, summed over the prompts). Each prompt runs every arm back to
back, --repeat times, and each arm keeps its fastest run, so a busy machine slows every arm alike;
the acceptance and the tokens per target pass do not depend on the machine at all.

Needs only the standard library (the prompts are encoded with this folder's bpe.py and rendered
with corpus.py's chat renderer, which test_train_export checks against the engine's).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpe  # noqa: E402
import corpus  # noqa: E402

RAW = ["Hello", "In the beginning", "The Lord is my shepherd", "Blessed are", "And it came to pass",
       "What is love", "The king said", "Hello, how are you", "Once upon a time", "The light"]
CHAT = ["Hello", "Who are you?", "What does John 3:16 say?", "Tell me a verse about light.",
        "Which book comes after Genesis?"]


def generate(args, ids, draft, draft_model=None):
    cmd = [args.deltafin, "generate-ids", "--model-root", args.model, "--ids", ",".join(map(str, ids)),
           "--max-new", str(args.max_new), "--draft", draft, "--threads", str(args.threads)]
    cmd += ["--stats"]
    if draft != "off":
        cmd += ["--draft-always"]
    if draft_model:
        cmd += ["--draft-model", draft_model]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    stats = {}
    for line in r.stderr.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                stats = json.loads(line)
            except ValueError:
                pass
    return json.loads(r.stdout.strip().splitlines()[-1]), stats


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deltafin", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--dspark")
    ap.add_argument("--qwen", help="a Qwen3 folder (with its tokenizer) to draft with")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each arm per prompt; the fastest counts")
    ap.add_argument("--markdown", action="store_true", help="also print the table in Markdown")
    ap.add_argument("--max-new", type=int, default=48)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    tok = bpe.Tokenizer.load(args.model)
    r = corpus.ChatRenderer(tok)
    sets = {"raw": [[tok.special("[BOS]")] + tok.encode(p) for p in RAW],
            "chat": [r.prompt(p, True) for p in CHAT]}
    drafters = [("ngram", None)] + ([("dspark", args.dspark)] if args.dspark else []) + \
        ([("qwen", args.qwen)] if args.qwen else [])
    rows = []
    for name, prompts in sets.items():
        arms = [("off", None)] + drafters
        failed = {}
        results = {d: [] for d, _ in arms}  # per prompt: (ids, stats of the fastest run)
        for ids in prompts:
            best = {}
            for _ in range(max(args.repeat, 1)):
                for d, dm in arms:
                    if d in failed:
                        continue
                    try:
                        got, st = generate(args, ids, d, dm)
                    except subprocess.CalledProcessError as e:
                        failed[d] = (e.stderr.strip().splitlines() or ["?"])[-1]
                        continue
                    if d != "off" and st.get("drafter", "") == "":
                        failed[d] = st.get("draft_note", "no drafter")
                        continue
                    if d not in best or st.get("decode_seconds", 0) < best[d][1].get("decode_seconds", 0):
                        if d in best and got != best[d][0]:
                            raise SystemExit(f"{d}: two runs of one prompt gave different ids")
                        best[d] = (got, st)
            for d, _ in arms:
                if d in best:
                    results[d].append(best[d])
        plain = [r[0] for r in results["off"]]
        plain_seconds = sum(r[1].get("decode_seconds", 0) for r in results["off"])
        tokens = sum(len(p) for p in plain)
        for d, _ in drafters:
            if d in failed:
                print(f"{name:4s} {d:6s}: not measured: {failed[d]}", flush=True)
                continue
            got = results[d]
            same = [r[0] for r in got] == plain
            proposed = sum(r[1].get("proposed", 0) for r in got)
            accepted = sum(r[1].get("accepted", 0) for r in got)
            passes = sum(r[1].get("verify_passes", 0) + r[1].get("plain_passes", 0) for r in got)
            seconds = sum(r[1].get("decode_seconds", 0) for r in got)
            speedup = plain_seconds / seconds if seconds > 0 else 0.0
            rows.append((name, d, accepted, proposed, tokens / max(passes, 1), speedup, same))
            print(f"{name:4s} {d:6s}: {len(prompts)} prompts, {tokens} tokens, acceptance "
                  f"{accepted}/{proposed} = {accepted / max(proposed, 1):.2f}, {tokens / max(passes, 1):.2f} tokens per "
                  f"target pass, decode speed-up {speedup:.2f}x, ids identical to no drafting: {same}", flush=True)
    if args.markdown:
        print("\n| prompts | drafter | accepted / proposed | tokens per target pass | decode speed-up | ids equal to no drafting |")
        print("|---|---|---|---|---|---|")
        for name, d, a, p, tpp, sp, same in rows:
            print(f"| {name} | {d} | {a} / {p} ({a / max(p, 1):.2f}) | {tpp:.2f} | {sp:.2f}x | {'yes' if same else 'NO'} |")

if __name__ == "__main__":
    main()
