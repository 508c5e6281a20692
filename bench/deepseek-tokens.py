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

Every pair and request outside its tolerance is classified ("explained by"), from what the
log and DeepSeek's own usage show, never from dsh's figure:

  * `cwd`: the log's `/snapshot/cwd` (the corpus recorder's stand-in for a real working
    directory of unknown length) is in the growth, or (for a miss) anywhere before the request:
    the log does not hold the text that was sent;
  * `not-as-generated`: an assistant message in the growth (or before the request) counts, as
    logged, otherwise than what DeepSeek generated for it (its `outputTokens` + 1, less its
    reasoning where DSH does not send it back): the logged message is not the one DeepSeek
    generated and read back (arguments filled in after generation, usage copied from another log);
  * `hidden-header`: a request header between the two requests changes a system prompt the log
    redacts (`{{system}}`): the hidden prefix changes by an amount the log does not show;
  * `input-end`: DeepSeek served the unit at the end of the previous request's input where dsh
    predicted the longer one at the end of its output (DeepSeek's cache is best-effort: the output
    unit is not always built, see docs/cache.md); with an exact count the miss is then off by
    the whole blocks between the two;
  * `unexplained`: none of these.

The figures are printed for all pairs and requests, then for those the corpus does not make
unknowable (no `cwd`, `not-as-generated` nor `hidden-header`). Not a test: nothing here asserts.
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


def events(text):
    """(seq, line, event) for every line with a seq."""
    out = []
    for line in text.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        s = e.get("seq", e.get("seq0"))
        if s is not None:
            out.append((s, line, e))
    return out


def cwd_between(evs, a, b):
    """Whether events after seq a up to seq b mention the placeholder cwd."""
    return any(a < s < b and "/snapshot/cwd" in line for s, line, _ in evs)


def placeholder_change(evs, a, b):
    """Whether a request header between seq a and b changes a system prompt the log redacts
    (`{{...}}`): the hidden prefix changes by an amount the log does not show."""
    for s, _, e in evs:
        h = (e.get("data") or {}).get("header") or {}
        if a < s < b and e.get("type") == "request/header" and "{{" in str(h.get("system", "")):
            return True
    return False


def node_tokens(log):
    """dsh's deepseek-v4 count of each surface node of the log, by seq."""
    args = [dsh, "measure", "--json", "--tokenizer", "deepseek-v4", log]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        return {}
    return {n["seq"]: n["tokens"] for n in json.loads(out.stdout)["tokenizer"]["nodes"]}


def not_as_generated(evs, nodes):
    """Seqs of the assistant messages with DeepSeek's usage whose logged form counts otherwise
    than what DeepSeek generated: outputTokens + 1 (the closing token), less the reasoning where
    it is not sent back (an answer without a tool call)."""
    bad = set()
    for s, _, e in evs:
        d = e.get("data") or {}
        u = d.get("usage") or {}
        if e.get("type") != "assistant/message" or "reasoningTokens" not in u or s not in nodes:
            continue
        m = d.get("message", d)
        calls = any(b.get("type") == "tool-call" for b in m.get("content", []))
        expected = u["outputTokens"] + 1 - (0 if calls else u["reasoningTokens"])
        if nodes[s] != expected:
            bad.add(s)
    return bad


BLOCK = 128
CORPUS = {"cwd", "not-as-generated", "hidden-header"}
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
    evs = events(text)
    altered = not_as_generated(evs, node_tokens(str(log)))
    for (d, h, o), (pd, ph, po) in zip(own[1:], own):
        if prompt(d) >= 1000:
            why = []
            # The first request's text is in the hidden prefix's offset.
            if cwd_between(evs, own[0][0]["seq"], d["seq"]) and d["promptTokens"] != prompt(d):
                why.append("cwd")
            if any(x < d["seq"] for x in altered):
                why.append("not-as-generated")
            if placeholder_change(evs, pd["seq"], d["seq"]):
                why.append("hidden-header")
            hit = d["reported"]["cacheReadTokens"]
            if hit == prompt(pd) // BLOCK * BLOCK and d["predictedHit"] - hit >= BLOCK:
                why.append("input-end")
            miss = (log.name, d["seq"], d["predictedMiss"], d["reported"]["inputTokens"])
            misses.append(miss + (d["predictedHit"], hit, d["promptTokens"] - prompt(d), why))
        if prompt(pd) < 1000 or prompt(d) < 1000:
            continue
        rep = prompt(d) - prompt(pd)
        if rep <= 0:
            continue
        why = ["cwd"] if cwd_between(evs, pd["seq"], d["seq"]) else []
        if any(pd["seq"] <= x < d["seq"] for x in altered):
            why.append("not-as-generated")
        if placeholder_change(evs, pd["seq"], d["seq"]):
            why.append("hidden-header")
        growth.append((log.name, d["seq"], rep, d["promptTokens"] - pd["promptTokens"], why))
        heur.append((h["promptTokens"] - ph["promptTokens"]) / rep)
        o200k.append((o["promptTokens"] - po["promptTokens"]) / rep)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def grown_ok(g):
    return abs(g[3] / g[2] - 1) <= 0.05


def miss_ok(m):
    return abs(m[2] - m[3]) <= BLOCK


def explained(rows, ok):
    """How many rows outside the tolerance each explanation covers."""
    out = {}
    for r in rows:
        if not ok(r):
            for why in r[-1] or ["unexplained"]:
                out[why] = out.get(why, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(out.items())) or "none"


def report(name, rows):
    ratios = [c / r for _, _, r, c, _ in rows]
    ok = sum(1 for g in rows if grown_ok(g))
    print(f"{name}: {len(rows)} pairs, {ok} within +-5% ({100 * ok / max(1, len(rows)):.0f}%), "
          f"median ratio {statistics.median(ratios):.3f}, p10 {pct(ratios, 0.1):.2f}, p90 {pct(ratios, 0.9):.2f}; "
          f"outside, explained by: {explained(rows, grown_ok)}")


def report_miss(name, rows):
    ok = sum(1 for m in rows if miss_ok(m))
    print(f"{name}: {len(rows)} non-first requests, {ok} predicted within +-128 tokens "
          f"({100 * ok / max(1, len(rows)):.0f}%); outside, explained by: {explained(rows, miss_ok)}")


def knowable(rows):
    return [r for r in rows if not CORPUS & set(r[-1])]


report("growth, deepseek-v4", growth)
report("growth, deepseek-v4, where the log holds what was sent", knowable(growth))
print(f"growth, heuristic: median ratio {statistics.median(heur):.3f}, p10 {pct(heur, 0.1):.2f}, "
      f"p90 {pct(heur, 0.9):.2f}")
print(f"growth, o200k: median ratio {statistics.median(o200k):.3f}, p10 {pct(o200k, 0.1):.2f}, "
      f"p90 {pct(o200k, 0.9):.2f}")
report_miss("cache miss, deepseek-v4", misses)
report_miss("cache miss, deepseek-v4, where the log holds what was sent", knowable(misses))
if "-v" in sys.argv or "--verbose" in sys.argv:
    print("growth: log, seq, reported, dsh, explained by (outside +-5% only)")
    for g in growth:
        print("growth", *g[:4], (",".join(g[4]) or "unexplained") if not grown_ok(g) else "")
    print("miss: log, seq, predicted, reported, predicted hit, reported hit, prompt error, "
          "explained by (outside +-128 only)")
    for m in misses:
        print("miss", *m[:7], (",".join(m[7]) or "unexplained") if not miss_ok(m) else "")
