#!/usr/bin/env python3
"""Writes the samples/measure-example.jsonl and samples/meter-*.jsonl logs used by
tests/it/measure.rs (authored for dsh; numbers checked against the oracle)."""
import json, sys, os
OUT = os.path.dirname(os.path.abspath(__file__))
HDR = {"config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}, "system": "Be brief.", "tools": [{"name": "bash", "description": "Run a command.", "parameters": {"type": "object"}}]}
class L:
    def __init__(s, id):
        s.id = id; s.ev = []
    def add(s, type, data, **kw):
        e = {"type": type, "seq": len(s.ev), "time": 1700000000000 + len(s.ev), "data": data}
        e.update(kw); s.ev.append(e); return e["seq"]
    def user(s, text, turn):
        return s.add("user/message", {"role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "id": f"u{len(s.ev)}"}, surfaceOp="append")
    def chunk(s, turn, step, chunk):
        return s.add("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk})
    def amsg(s, turn, step, content, usage=None, sources=None):
        d = {"turn": turn, "step": step, "message": {"role": "assistant", "content": content, "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}, "id": f"a{len(s.ev)}"}}
        if usage is not None: d["usage"] = usage
        kw = {"surfaceOp": "append"}
        if sources is not None: kw["sourceEventSeqs"] = sources
        return s.add("assistant/message", d, **kw)
    def write(s, name):
        with open(os.path.join(OUT, name), 'w') as f:
            f.write(json.dumps({"type": "session", "version": 0, "id": s.id, "createdAt": 0, "cwd": "/tmp/p", "delegationDepth": 0}) + "\n")
            for e in s.ev: f.write(json.dumps(e, ensure_ascii=False) + "\n")

def prologue(l, text="hello there"):
    l.add("turn/start", {"turn": 1})
    l.add("step/start", {"turn": 1, "step": 1})
    l.user(text, 1)
    l.add("request/header", {"header": HDR, "reason": "initial"})
    l.add("request/context", {"provider": "deepseek-official", "model": "deepseek-v4-flash", "contextWindow": 4000})

def text_chunks(l, turn, step, text, idx=0):
    a = l.chunk(turn, step, {"type": "block-start", "index": idx, "blockType": "text"})
    l.chunk(turn, step, {"type": "text-delta", "index": idx, "text": text})
    l.chunk(turn, step, {"type": "block-end", "index": idx, "block": {"type": "text", "text": text}})
    b = l.chunk(turn, step, {"type": "finish", "reason": {"kind": "stop"}})
    return list(range(a, b + 1))

# 1. step/start twice
l = L("meter-step-twice"); prologue(l)
l.add("step/start", {"turn": 1, "step": 2})
l.write("meter-step-twice.jsonl")

# 2. cited chunk of another step
l = L("meter-chunk-other-step"); prologue(l)
c = text_chunks(l, 1, 1, "answer text")
c2 = l.chunk(1, 2, {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 1}})
l.amsg(1, 1, [{"type": "text", "text": "answer text"}], usage={"inputTokens": 500, "outputTokens": 10}, sources=c + [c2])
l.add("step/end", {"turn": 1, "step": 1}); l.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
l.write("meter-chunk-other-step.jsonl")

# 3. cites a non-chunk
l = L("meter-cites-non-chunk"); prologue(l)
c = text_chunks(l, 1, 1, "answer text")
l.amsg(1, 1, [{"type": "text", "text": "answer text"}], usage={"inputTokens": 500, "outputTokens": 10}, sources=[4] + c)
l.add("step/end", {"turn": 1, "step": 1}); l.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
l.write("meter-cites-non-chunk.jsonl")

# 4. step/end mismatch
l = L("meter-step-end-mismatch"); prologue(l)
l.add("step/end", {"turn": 1, "step": 2})
l.write("meter-step-end-mismatch.jsonl")

# 5. assistant/message outside any step
l = L("meter-message-no-step"); prologue(l)
l.add("step/end", {"turn": 1, "step": 1})
l.amsg(1, 1, [{"type": "text", "text": "late"}])
l.write("meter-message-no-step.jsonl")

# 6. repeated step labels: a message cites chunks of an earlier step with the same labels
l = L("meter-repeated-labels"); prologue(l, "x" * 40)
c = text_chunks(l, 1, 1, "first attempt " * 20)
l.add("step/end", {"turn": 1, "step": 1})
l.add("step/start", {"turn": 1, "step": 2})
text_chunks(l, 1, 2, "unrelated")
l.add("step/end", {"turn": 1, "step": 2})
l.add("step/start", {"turn": 1, "step": 1})
l.amsg(1, 1, [{"type": "text", "text": "short"}], usage={"inputTokens": 30, "outputTokens": 70, "cacheReadTokens": 12}, sources=c)
l.add("step/end", {"turn": 1, "step": 1}); l.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
l.write("meter-repeated-labels.jsonl")

# 7. assembler rules through the anchor: block-end replaces deltas, max-tokens drops tool calls,
#    an unclosed tool call assembles from deltas, a reasoning delta-only block.
l = L("meter-assembler"); prologue(l, "emoji 🙂 twice 🙂")
s = []
s.append(l.chunk(1, 1, {"type": "reasoning-delta", "index": 0, "text": "think " * 7}))
s.append(l.chunk(1, 1, {"type": "block-start", "index": 1, "blockType": "text"}))
s.append(l.chunk(1, 1, {"type": "text-delta", "index": 1, "text": "draft that the block-end replaces"}))
s.append(l.chunk(1, 1, {"type": "block-end", "index": 1, "block": {"type": "text", "text": "final"}}))
s.append(l.chunk(1, 1, {"type": "text-delta", "index": 1, "text": "ignored after end"}))
s.append(l.chunk(1, 1, {"type": "tool-call-delta", "index": 2, "id": "c1", "name": "bash", "argumentsDelta": "{\"command\":"}))
s.append(l.chunk(1, 1, {"type": "tool-call-delta", "index": 2, "id": "c1", "argumentsDelta": "\"ls -la\"}"}))
s.append(l.chunk(1, 1, {"type": "usage", "usage": {"inputTokens": 50, "outputTokens": 9}}))
s.append(l.chunk(1, 1, {"type": "finish", "reason": {"kind": "max-tokens"}}))
# cited out of order: the finish first, then the rest
l.amsg(1, 1, [{"type": "reasoning", "text": "think " * 7}, {"type": "text", "text": "final"}], usage={"inputTokens": 50, "outputTokens": 9, "cacheReadTokens": 37}, sources=[s[-1]] + s[:-1])
l.add("step/end", {"turn": 1, "step": 1}); l.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
l.add("turn/start", {"turn": 2})
l.add("step/start", {"turn": 2, "step": 1})
l.user("more input after step/start", 2)
l.write("meter-assembler.jsonl")

# 8. empty source list and usage below the estimate (estimated anchor), plus an empty assistant message
l = L("meter-estimated-anchor"); prologue(l, "a fairly long user prompt " * 10)
l.amsg(1, 1, [], usage={"inputTokens": 1, "outputTokens": 1}, sources=[])
l.add("step/end", {"turn": 1, "step": 1})
l.add("step/start", {"turn": 1, "step": 2})
cs = text_chunks(l, 1, 2, "ok")
l.amsg(1, 2, [{"type": "text", "text": "ok"}], usage={"inputTokens": 2, "outputTokens": 1}, sources=cs)
l.add("step/end", {"turn": 1, "step": 2}); l.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
l.write("meter-estimated-anchor.jsonl")

# --- measure-example.jsonl: compaction §1.10 worked example A, own texts of the same UTF-16 lengths
def u16(s): return len(s.encode('utf-16-le'))//2
def fit(base, n):
    s = base
    while u16(s) < n: s += "."
    assert u16(s) == n, (base, u16(s), n)
    return s
user1 = fit("Find every FIXME note in lib/ and say how many there are 😀😀", 69)
assert len(user1) == 67
system = fit("You are a terse coding assistant; be exact", 47)
tools = [{"name": "bash", "description": fit("Execute a shell command, return stdout", 44), "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
tj = json.dumps(tools, separators=(',', ':'), ensure_ascii=False)
assert u16(tj) == 175
reasoning = fit("Grep for FIXME notes", 23)
args = "{\"command\":\"grep -rn FIXME lib\"}"
assert u16(args) == 32
result = fit("lib/a.rs:3: // FIXME retry on err\nlib/b.rs:9: // FIXME drop the cache ✓\n[exit code: 0]", 87)
answer = fit("Found 2 FIXME notes: lib/a.rs:3 and lib/b.rs:9 (two).", 57)
user2 = fit("Fix the one in lib/b.rs now", 29)
HEAD = {"type": "session", "version": 0, "id": "dsh-measure-sample", "createdAt": 0, "cwd": "/home/dev/proj", "delegationDepth": 0}
ev = []
def add(t, d, **kw):
    e = {"type": t, "seq": len(ev), "time": 1710000000000 + len(ev), "data": d}; e.update(kw); ev.append(e)
src = {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}
add("turn/start", {"turn": 1})
add("step/start", {"turn": 1, "step": 1})
add("user/message", {"role": "user", "content": [{"type": "text", "text": user1}], "source": {"kind": "user"}, "id": "m-u1"}, surfaceOp="append")
add("request/header", {"header": {"config": {"provider": "deepseek-official", "model": "deepseek-v4-flash", "reasoningEffort": "high", "maxTokens": 256000}, "adapterDefaults": {"reasoningEffort": True, "maxTokens": True}, "system": system, "tools": tools}, "reason": "initial"})
add("request/context", {"provider": "deepseek-official", "model": "deepseek-v4-flash", "contextWindow": 1000000})
c = lambda ch: add("assistant/chunk", {"turn": 1, "step": 1, "chunk": ch})
c({"type": "block-start", "index": 0, "blockType": "reasoning"})
c({"type": "reasoning-delta", "index": 0, "text": reasoning})
c({"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": reasoning}})
c({"type": "block-start", "index": 1, "blockType": "tool-call"})
c({"type": "tool-call-delta", "index": 1, "id": "call_a", "name": "bash", "argumentsDelta": args})
c({"type": "block-end", "index": 1, "block": {"type": "tool-call", "id": "call_a", "name": "bash", "arguments": args}})
c({"type": "usage", "usage": {"inputTokens": 40, "outputTokens": 25, "cacheReadTokens": 64}})
c({"type": "finish", "reason": {"kind": "tool-calls"}})
add("assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [{"type": "reasoning", "text": reasoning}, {"type": "tool-call", "id": "call_a", "name": "bash", "arguments": args}], "source": src, "id": "m-a1"}, "usage": {"inputTokens": 40, "outputTokens": 25, "cacheReadTokens": 64}}, surfaceOp="append", sourceEventSeqs=list(range(5, 13)))
add("tool/call", {"turn": 1, "step": 1, "callId": "call_a", "name": "bash", "arguments": args})
add("tool/result", {"turn": 1, "step": 1, "message": {"role": "user", "content": [{"type": "tool-result", "toolCallId": "call_a", "content": [{"type": "text", "text": result}], "isError": False}], "source": {"kind": "tool", "callId": "call_a"}, "id": "m-t1"}}, surfaceOp="append", sourceEventSeqs=[14])
add("step/end", {"turn": 1, "step": 1})
add("step/start", {"turn": 1, "step": 2})
c = lambda ch: add("assistant/chunk", {"turn": 1, "step": 2, "chunk": ch})
c({"type": "block-start", "index": 0, "blockType": "text"})
c({"type": "text-delta", "index": 0, "text": answer})
c({"type": "block-end", "index": 0, "block": {"type": "text", "text": answer}})
c({"type": "usage", "usage": {"inputTokens": 200, "outputTokens": 18, "cacheReadTokens": 128}})
c({"type": "finish", "reason": {"kind": "stop"}})
add("assistant/message", {"turn": 1, "step": 2, "message": {"role": "assistant", "content": [{"type": "text", "text": answer}], "source": src, "id": "m-a2"}, "usage": {"inputTokens": 200, "outputTokens": 18, "cacheReadTokens": 128}}, surfaceOp="append", sourceEventSeqs=list(range(18, 23)))
add("step/end", {"turn": 1, "step": 2})
add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
add("turn/start", {"turn": 2})
add("step/start", {"turn": 2, "step": 1})
add("user/message", {"role": "user", "content": [{"type": "text", "text": user2}], "source": {"kind": "user"}, "id": "m-u2"}, surfaceOp="append")
assert len(ev) == 29
with open(os.path.join(OUT, 'measure-example.jsonl'), 'w') as f:
    f.write(json.dumps(HEAD) + "\n")
    for e in ev: f.write(json.dumps(e, ensure_ascii=False) + "\n")
