#!/usr/bin/env python3
"""Drafting on a trained model: acceptance of each drafter, and the ids with drafting equal to the
ids without, through `deltafin generate-ids` (greedy), on raw and chat prompts.

  measure_drafts.py --deltafin build/ci-cpu/bin/deltafin --model MODEL_DIR [--dspark DRAFT_DIR] [--max-new 48]

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
    if draft != "off":
        cmd += ["--draft-always", "--stats"]
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
    ap.add_argument("--max-new", type=int, default=48)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    tok = bpe.Tokenizer.load(args.model)
    r = corpus.ChatRenderer(tok)
    sets = {"raw": [[tok.special("[BOS]")] + tok.encode(p) for p in RAW],
            "chat": [r.prompt(p, True) for p in CHAT]}
    drafters = [("ngram", None)] + ([("dspark", args.dspark)] if args.dspark else [])
    for name, prompts in sets.items():
        plain = [generate(args, ids, "off")[0] for ids in prompts]
        for d, dm in drafters:
            proposed = accepted = passes = 0
            same = True
            for ids, want in zip(prompts, plain):
                got, st = generate(args, ids, d, dm)
                same &= got == want
                proposed += st.get("proposed", 0)
                accepted += st.get("accepted", 0)
                passes += st.get("verify_passes", 0) + st.get("plain_passes", 0)
            tokens = len(prompts) * args.max_new
            print(f"{name:4s} {d:6s}: {len(prompts)} prompts x {args.max_new} tokens, acceptance "
                  f"{accepted}/{proposed} = {accepted / max(proposed, 1):.2f}, {tokens / max(passes, 1):.2f} tokens per "
                  f"target pass, ids identical to no drafting: {same}", flush=True)


if __name__ == "__main__":
    main()
