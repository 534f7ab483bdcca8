#!/usr/bin/env node
// Independent K3 reference encoder (test-only), written from the algorithm tiktoken documents:
// split with the K3 pattern (here in V8's regex engine, not ICU), then merge each piece by the
// lowest rank of the concatenated bytes, leftmost first, rescanning every pair (tiktoken's
// quadratic loop). Usage: node encode_k3_tiktoken.js TIKTOKEN_MODEL [STRINGS.json]
// (strings from the file or stdin as a JSON array); prints a JSON array of id arrays.
"use strict";
const fs = require("fs");

// Unicode White_Space, which Rust's \s (tiktoken) means; JavaScript's \s differs in two places.
const WS = "\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
// One letter of the class that is not Han: a lookahead instead of the `v` flag's set difference
// ([A--B]), which Node 18 (Debian 12's and Ubuntu 24.04's nodejs) does not have.
const NOT_HAN = "(?!\\p{Script=Han})";
const UPPER = `(?:${NOT_HAN}[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}])`;
const LOWER = `(?:${NOT_HAN}[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}])`;
// (?i:'s|'t|'re|'ve|'m|'ll|'d) spelled out: V8 in Node 18 and 20 has no inline flag groups.
const CONTRACTION = "(?:'(?:[sS\\u017f]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))";
const PATTERN = new RegExp(
  [
    "\\p{Script=Han}+",
    `[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+${CONTRACTION}?`,
    `[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*${CONTRACTION}?`,
    "\\p{N}{1,3}",
    ` ?[^${WS}\\p{L}\\p{N}]+[\\r\\n]*`,
    `[${WS}]*[\\r\\n]+`,
    `[${WS}]+(?![^${WS}])`,
    `[${WS}]+`,
  ].join("|"),
  "gu"
);

const ranks = new Map();
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\n")) {
  const [b64, rank] = line.trim().split(" ");
  if (b64) ranks.set(Buffer.from(b64, "base64").toString("latin1"), Number(rank));
}

function bpe(bytes) {
  const whole = ranks.get(bytes);
  if (whole !== undefined) return [whole];
  let parts = Array.from(bytes);
  for (;;) {
    let best = -1, at = -1;
    for (let i = 0; i + 1 < parts.length; i++) {
      const r = ranks.get(parts[i] + parts[i + 1]);
      if (r !== undefined && (best < 0 || r < best)) { best = r; at = i; }
    }
    if (best < 0) break;
    parts.splice(at, 2, parts[at] + parts[at + 1]);
  }
  return parts.map((p) => ranks.get(p));
}

function encode(text) {
  const ids = [];
  for (const m of text.matchAll(PATTERN)) {
    ids.push(...bpe(Buffer.from(m[0], "utf8").toString("latin1")));
  }
  return ids;
}

const texts = JSON.parse(fs.readFileSync(process.argv[3] || 0, "utf8"));
process.stdout.write(JSON.stringify(texts.map(encode)) + "\n");
