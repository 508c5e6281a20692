#!/usr/bin/env python3
"""Write samples/prune-example.jsonl and samples/prune-example.appended.jsonl.

A stand-in for the spec's pruner worked example (compaction §3.4) that the
tests can use without ../shared: an open turn whose one step ran two
parallel calls with oversized results, one of supplementary-plane text
(code points and UTF-16 units differ) and one of text / image / text (the
marker lands before the image). The appended file is what the reference's
pruneSession appends inside the still-open turn, computed here from the
spec's rules alone (code-point slicing, the marker, the heuristic prices,
the reference's key order), not by dsh.

Run from the repository root: python3 samples/generate_prune_example.py
"""

import json
import math

MARKER = "\n\n[... tool result middle pruned ...]\n\n"
THRESHOLD, HEAD, TAIL = 8192, 4096, 1024
T0 = 1767300000000


def dumps(v):
    # JSON.stringify: no spaces, non-ASCII as is.
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def len16(s):
    return len(s.encode("utf-16-le")) // 2


def q(n):
    return math.ceil(n / 4)


def price_block(b):
    t = b.get("type")
    if t in ("text", "reasoning"):
        return q(len16(b["text"])) + 4
    if t == "tool-result":
        return sum(price_block(x) for x in b["content"]) + 4
    return 4 + q(len16(dumps(b)))


def price_message(m):
    return sum(price_block(b) for b in m["content"]) + 4


def prune_content(blocks):
    """compaction §3.2, on code points (Python str indexes code points)."""
    total = sum(len(b["text"]) for b in blocks if b["type"] == "text")
    if total <= THRESHOLD:
        return None
    r0, r1 = HEAD, total - TAIL
    out, consumed, inserted = [], 0, False
    for b in blocks:
        if b["type"] != "text":
            out.append(b)
            continue
        text = b["text"]
        start, end = consumed, consumed + len(text)
        head_end = min(max(r0 - start, 0), len(text))
        tail_start = min(max(r1 - start, 0), len(text))
        here = start < r1 and end > r0 and not inserted
        new = text[:head_end] + (MARKER if here else "") + text[tail_start:]
        inserted = inserted or here
        if new:
            nb = dict(b)
            nb["text"] = new
            out.append(nb)
        consumed = end
    return out


def main():
    header = {
        "type": "session",
        "version": 0,
        "id": "sample-prune-example",
        "createdAt": 0,
        "cwd": "/home/dev/dsh-demo",
        "delegationDepth": 0,
    }
    model = {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}
    image = {
        "type": "image",
        "attachment": {
            "attachmentId": "sha256:" + "7c" * 32,
            "mediaType": "image/png",
            "bytes": 4096,
            "width": 96,
            "height": 48,
            "name": "plot.png",
        },
    }
    calls = [
        ("call_clef", "cat music.log"),
        ("call_mix", "cat build-and-plot.log"),
    ]
    results = {
        # 2500 musical G clefs (U+1D11E, two UTF-16 units each), 6500 letters.
        "call_clef": [{"type": "text", "text": "\U0001D11E" * 2500 + "z" * 6500}],
        # 4500 + 4500 code points around an image.
        "call_mix": [{"type": "text", "text": "Q" * 4500}, image, {"type": "text", "text": "R" * 4500}],
    }
    events = [
        ("turn/start", {"turn": 1}, {}),
        ("step/start", {"turn": 1, "step": 1}, {}),
        (
            "user/message",
            {"role": "user", "content": [{"type": "text", "text": "Show me both logs."}], "source": {"kind": "user"}, "id": "msg-u1"},
            {"surfaceOp": "append"},
        ),
        (
            "request/header",
            {"header": {"config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}, "system": "You are a careful coding agent."}, "reason": "initial"},
            {},
        ),
        (
            "assistant/message",
            {
                "turn": 1,
                "step": 1,
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "tool-call", "id": cid, "name": "bash", "arguments": dumps({"command": cmd})}
                        for cid, cmd in calls
                    ],
                    "source": model,
                    "id": "msg-a1",
                },
            },
            {"surfaceOp": "append"},
        ),
    ]
    for cid, cmd in calls:
        events.append(("tool/call", {"turn": 1, "step": 1, "callId": cid, "name": "bash", "arguments": dumps({"command": cmd})}, {}))
    call_seqs = {cid: 5 + i for i, (cid, _) in enumerate(calls)}
    for i, (cid, _) in enumerate(calls):
        msg = {
            "role": "user",
            "content": [{"type": "tool-result", "toolCallId": cid, "content": results[cid], "isError": False}],
            "source": {"kind": "tool", "callId": cid},
            "id": f"msg-t{i + 1}",
        }
        events.append(("tool/result", {"turn": 1, "step": 1, "message": msg}, {"sourceEventSeqs": [call_seqs[cid]], "surfaceOp": "append"}))
    events.append(("step/end", {"turn": 1, "step": 1}, {}))
    # The turn stays open: the agent is between steps.

    lines = [dumps(header)]
    stored = []
    for seq, (typ, data, extra) in enumerate(events):
        ev = {"type": typ, "seq": seq, "time": T0 + seq, "data": data}
        ev.update(extra)
        stored.append(ev)
        lines.append(dumps(ev))
    with open("samples/prune-example.jsonl", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")

    # pruneSession inside the open turn: pairs from the next seq, in
    # surface order; time as dsh stamps it with --time T0+100.
    appended = []
    seq = len(stored)
    time = T0 + 100
    for ev in stored:
        if ev["type"] != "tool/result":
            continue
        msg = ev["data"]["message"]
        new_content = prune_content(msg["content"][0]["content"])
        if new_content is None:
            continue
        s = ev["seq"]
        appended.append({
            "type": "compaction/prune",
            "seq": seq,
            "time": time,
            "data": {"shadowedRange": {"start": s, "end": s}, "shadowedSeqs": [s], "shadowedTokenCount": price_message(msg)},
        })
        result = dict(msg["content"][0])
        result["content"] = new_content
        new_msg = dict(msg)
        new_msg["content"] = [result]
        data = dict(ev["data"])
        data["message"] = new_msg
        appended.append({
            "type": "tool/result",
            "seq": seq + 1,
            "time": time,
            "data": data,
            "sourceEventSeqs": [s],
            "surfaceOp": {"op": "replace", "start": s, "end": s},
        })
        seq += 2
    with open("samples/prune-example.appended.jsonl", "w", encoding="utf-8") as f:
        f.write("".join(dumps(e) + "\n" for e in appended))


if __name__ == "__main__":
    main()
