#!/usr/bin/env python3
"""The acceptance figures of `--tokenizer deepseek-v4` against DeepSeek's own usage reports.

    bench/deepseek-tokens.py [-v] [DSH] [CORPUS_REAL_DIR]

DSH defaults to target/release/dsh, the directory to ../shared/corpus/real. It takes the genuine
DeepSeek records there: logs whose usage has both `reasoningTokens` and `cacheReadTokens`, and
within them the requests `dsh cache --json --tokenizer deepseek-v4` lists that are the session's
own (not inherited from a parent), did not fail and have usage. It prints:

  * growth: for consecutive such requests of a session whose reported prompt is at least 1,000
    tokens, dsh's prompt growth over the reported one (prompt = uncached input + cache read): the
    share within +-5%, the median ratio and p10/p90; the heuristic's and o200k's ratios beside it;
  * cache: for the non-first such requests (prompt at least 1,000 tokens), dsh's predicted miss (its prompt less its predicted
    hit, with the hidden prefix it estimates) against the reported uncached input: the share
    within +-128 tokens.

Pairs and requests whose growth includes the log's `/snapshot/cwd` (the corpus recorder's
stand-in for a real working directory of unknown length) are counted apart as well.
Not a test: nothing here asserts.
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
args = [a for a in sys.argv[1:] if not a.startswith("-")]
dsh = args[0] if args else str(root / "target/release/dsh")
real = Path(args[1]) if len(args) > 1 else root.parent / "shared/corpus/real"


def cache(log, tokenizer):
    args = [dsh, "cache", "--json", "--lenient", log] + (["--tokenizer", tokenizer] if tokenizer else [])
    out = subprocess.run(args, capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def prompt(r):
    u = r["reported"]
    return u["inputTokens"] + u["cacheReadTokens"] + u["cacheWriteTokens"]


def cwd_between(text, a, b):
    """Whether events after seq a up to seq b mention the placeholder cwd."""
    for line in text.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        s = e.get("seq", e.get("seq0"))
        if s is not None and a < s < b and "/snapshot/cwd" in line:
            return True
    return False


growth, heur, o200k, misses = [], [], [], []
for log in sorted(real.glob("*.jsonl")):
    text = log.read_text()
    if '"reasoningTokens"' not in text or '"cacheReadTokens"' not in text:
        continue
    ds, hs, os_ = cache(str(log), "deepseek-v4"), cache(str(log), None), cache(str(log), "o200k")
    if ds is None or hs is None or os_ is None:
        continue
    own = [
        (d, h, o)
        for d, h, o in zip(ds["requests"], hs["requests"], os_["requests"])
        if not d["inherited"] and d["failed"] is None and d["reported"]
    ]
    for (d, h, o), (pd, ph, po) in zip(own[1:], own):
        cwd = cwd_between(text, pd["seq"], d["seq"])
        if prompt(d) >= 1000:
            misses.append((log.name, d["seq"], d["predictedMiss"], d["reported"]["inputTokens"], cwd))
        if prompt(pd) < 1000 or prompt(d) < 1000:
            continue
        rep = prompt(d) - prompt(pd)
        if rep <= 0:
            continue
        growth.append((log.name, d["seq"], rep, d["promptTokens"] - pd["promptTokens"], cwd))
        heur.append((h["promptTokens"] - ph["promptTokens"]) / rep)
        o200k.append((o["promptTokens"] - po["promptTokens"]) / rep)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def report(name, rows):
    ratios = [c / r for _, _, r, c, _ in rows]
    ok = sum(1 for x in ratios if abs(x - 1) <= 0.05)
    print(f"{name}: {len(rows)} pairs, {ok} within +-5% ({100 * ok / max(1, len(rows)):.0f}%), "
          f"median ratio {statistics.median(ratios):.3f}, p10 {pct(ratios, 0.1):.2f}, p90 {pct(ratios, 0.9):.2f}")


def report_miss(name, rows):
    ok = sum(1 for _, _, p, r, _ in rows if abs(p - r) <= 128)
    print(f"{name}: {len(rows)} non-first requests, {ok} predicted within +-128 tokens "
          f"({100 * ok / max(1, len(rows)):.0f}%)")


report("growth, deepseek-v4", growth)
report("growth, deepseek-v4, no /snapshot/cwd in the growth", [g for g in growth if not g[4]])
print(f"growth, heuristic: median ratio {statistics.median(heur):.3f}, p10 {pct(heur, 0.1):.2f}, "
      f"p90 {pct(heur, 0.9):.2f}")
print(f"growth, o200k: median ratio {statistics.median(o200k):.3f}, p10 {pct(o200k, 0.1):.2f}, "
      f"p90 {pct(o200k, 0.9):.2f}")
report_miss("cache miss, deepseek-v4", misses)
report_miss("cache miss, deepseek-v4, no /snapshot/cwd in the growth", [m for m in misses if not m[4]])
if "-v" in sys.argv or "--verbose" in sys.argv:
    for g in growth:
        print("growth", *g)
    for m in misses:
        print("miss", *m)
