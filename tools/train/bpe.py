"""Byte-level BPE in K3's tiktoken format: training, encoding, and the files K3 ships.

The corpus is ASCII (corpus.py folds it), and on ASCII text this pre-tokenizer is exactly K3's
8-alternative pattern (tests/fixtures/k3-tokenizer-golden.json `pattern`): \\p{Han} matches
nothing, \\p{L} is [A-Za-z], \\p{Lu} [A-Z], \\p{Ll} [a-z], \\p{N} [0-9], \\s Unicode White_Space.
Encoding is tiktoken's: inside each piece, merge the adjacent pair whose concatenation has the
lowest rank, the rule the engine's tokenizer follows, so the engine and this script give the same ids.
"""
import base64
import heapq
import json
import re
from collections import Counter

_S = r"\t\n\x0b\x0c\r "  # Unicode White_Space within ASCII
_SUFFIX = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
PATTERN = re.compile(
    r"[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+" + _SUFFIX
    + r"|[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*" + _SUFFIX
    + r"|[0-9]{1,3}"
    + r"| ?[^" + _S + r"A-Za-z0-9]+[\r\n]*"
    + r"|[" + _S + r"]*[\r\n]+"
    + r"|[" + _S + r"]+(?![^" + _S + r"])"
    + r"|[" + _S + r"]+"
)

# K3's 256 specials start at id n_ranks; these offsets carry names (K3-SPEC.md section 4).
SPECIAL_NAMES = {0: "[BOS]", 1: "[EOS]", 2: "<|end_of_msg|>", 3: "<|open|>", 4: "<|close|>", 5: "<|sep|>",
                 6: "[start_header_id]", 7: "[end_header_id]", 9: "[EOT]", 18: "<|media_begin|>",
                 19: "<|media_content|>", 20: "<|media_end|>", 21: "<|media_pad|>", 254: "[UNK]", 255: "[PAD]"}
MASK_OFFSET = 253  # the drafter's mask token (<|reserved_token_...|>), as K3's 163837


def pieces(text):
    """The pre-tokenizer's pieces; text no alternative matches becomes a piece of its own."""
    out, pos = [], 0
    for m in PATTERN.finditer(text):
        if m.start() > pos:
            out.append(text[pos:m.start()])
        if m.end() > m.start():
            out.append(m.group())
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def train(texts, n_ranks, log=None):
    """Ranks 0..255 are the single bytes; then merges, most frequent pair first (ties: the
    lexicographically smaller pair), until n_ranks tokens exist. Returns the list of token bytes."""
    counts = Counter()
    for t in texts:
        counts.update(pieces(t))
    vocab = [bytes([b]) for b in range(256)]
    index = {v: i for i, v in enumerate(vocab)}
    words = [[b for b in w.encode()] for w in counts]
    freq = list(counts.values())
    pair_count = Counter()
    where = {}
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += freq[wi]
            where.setdefault((a, b), set()).add(wi)
    heap = [(-n, vocab[a], vocab[b], a, b) for (a, b), n in pair_count.items()]
    heapq.heapify(heap)
    while len(vocab) < n_ranks and heap:
        negn, _, _, a, b = heapq.heappop(heap)
        cur = pair_count.get((a, b), 0)
        if cur != -negn:  # a stale entry: requeue with the pair's current count
            if cur > 0:
                heapq.heappush(heap, (-cur, vocab[a], vocab[b], a, b))
            continue
        if cur < 2:
            break
        merged = vocab[a] + vocab[b]
        if merged in index:
            new = index[merged]
        else:
            new = len(vocab)
            vocab.append(merged)
            index[merged] = new
        changed = Counter()
        for wi in list(where.get((a, b), ())):
            w, f = words[wi], freq[wi]
            for x, y in zip(w, w[1:]):
                changed[(x, y)] -= f
            nw, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    nw.append(new)
                    i += 2
                else:
                    nw.append(w[i])
                    i += 1
            words[wi] = nw
            for x, y in zip(nw, nw[1:]):
                changed[(x, y)] += f
                where.setdefault((x, y), set()).add(wi)
        for p, d in changed.items():
            if d == 0:
                continue
            pair_count[p] += d
            if pair_count[p] <= 0:
                del pair_count[p]
            elif d > 0:
                heapq.heappush(heap, (-pair_count[p], vocab[p[0]], vocab[p[1]], p[0], p[1]))
        pair_count.pop((a, b), None)
        if log and len(vocab) % 1000 == 0:
            log(f"bpe: {len(vocab)} ranks")
    return vocab


class Tokenizer:
    def __init__(self, vocab):
        self.vocab = list(vocab)
        self.rank = {v: i for i, v in enumerate(self.vocab)}
        self.n = len(self.vocab)
        self.cache = {}

    def special(self, name):
        for off, nm in SPECIAL_NAMES.items():
            if nm == name:
                return self.n + off
        raise KeyError(name)

    def encode_piece(self, piece):
        hit = self.cache.get(piece)
        if hit is not None:
            return hit
        parts = [bytes([b]) for b in piece.encode()]
        while len(parts) > 1:
            best, bi = None, -1
            for i in range(len(parts) - 1):
                r = self.rank.get(parts[i] + parts[i + 1])
                if r is not None and (best is None or r < best):
                    best, bi = r, i
            if best is None:
                break
            parts[bi:bi + 2] = [parts[bi] + parts[bi + 1]]
        ids = [self.rank[p] for p in parts]
        if len(self.cache) < 1_000_000:
            self.cache[piece] = ids
        return ids

    def encode(self, text):
        """Plain text (never a special id)."""
        out = []
        for p in pieces(text):
            out.extend(self.encode_piece(p))
        return out

    def decode(self, ids):
        b = b""
        for i in ids:
            if i < self.n:
                b += self.vocab[i]
            else:
                b += SPECIAL_NAMES.get(i - self.n, f"<|reserved_token_{i}|>").encode()
        return b.decode("utf-8", errors="replace")

    def save(self, out_dir):
        """tiktoken.model (base64 bytes + rank per line) and tokenizer_config.json with K3's 256 specials."""
        with open(f"{out_dir}/tiktoken.model", "w") as f:
            for r, v in enumerate(self.vocab):
                f.write(base64.b64encode(v).decode() + f" {r}\n")
        added = {}
        for i in range(256):
            content = SPECIAL_NAMES.get(i, f"<|reserved_token_{self.n + i}|>")
            added[str(self.n + i)] = {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
                                      "single_word": False, "special": True}
        cfg = {"added_tokens_decoder": added, "bos_token": "[BOS]", "eos_token": "[EOS]", "pad_token": "[PAD]",
               "unk_token": "[UNK]", "model_max_length": 1048576, "tokenizer_class": "TikTokenTokenizer"}
        with open(f"{out_dir}/tokenizer_config.json", "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")

    @staticmethod
    def load(model_dir):
        vocab = []
        with open(f"{model_dir}/tiktoken.model") as f:
            for line in f:
                b64, r = line.split()
                if int(r) != len(vocab):
                    raise ValueError("tiktoken.model ranks are not contiguous from 0")
                vocab.append(base64.b64decode(b64))
        return Tokenizer(vocab)
