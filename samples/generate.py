#!/usr/bin/env python3
"""Write the hand-authored sample logs in this directory.

Run from the repository root: `python3 samples/generate.py`. The output is
deterministic; the committed files are what it writes. Each sample is a small,
realistic DSH session log in the on-disk format of the reference JSONL backend
(format generation 0): a header line, then one storage record per line, with
runs of three or more text/reasoning/tool-call deltas packed into rows.

  coding-session.jsonl        three turns of a coding agent: tool calls (bash,
                              read_file), reasoning, usage, packed rows, an
                              image in a tool result, a request/context window
  coding-session.jsonl.zstd   the same log as a multi-frame Zstandard artifact
                              (header frame + one frame per turn); needs `zstd`
  compacted.jsonl             a pruned tool result and a compaction bracket
                              whose checkpoint replaces the first turn
  torn.jsonl                  a crash: the last turn is open (a tool call
                              without result) and the last line is cut short
  refused.jsonl               a damaged committed region: a seq gap followed by
                              a turn/end (the reference refuses it)
  anthropic-cache.jsonl       a session on an Anthropic route with real times:
                              tools and a system prompt past 1,024 tokens, a
                              pruned tool result, a 12-minute idle gap and a
                              system-prompt change; its usage is what DSH's
                              adapter gets (no cache_control: nothing read or
                              written), for `dsh cache --anthropic-breakpoints`
"""

import json
import math
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1767225600000

PRUNE_MARKER = "\n\n[... tool result middle pruned ...]\n\n"
PREAMBLE = (
    "This is an automatically generated checkpoint condensing an earlier span of the conversation "
    "to free up context. Treat the captured context as established background and build on it "
    "without restating it. Continue the task directly from the messages that follow, without "
    "acknowledging this checkpoint."
)

SYSTEM = (
    "You are dsh-agent, a careful coding assistant working in a Rust repository. "
    "Prefer small, verifiable steps. Run the tests after every change."
)
TOOLS = [
    {
        "name": "bash",
        "description": "Run one shell command in the workspace and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command line."}},
            "required": ["command"],
        },
    },
    {
        "name": "read_file",
        "description": "Read a text file from the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
            "required": ["path"],
        },
    },
]
ROUTE = {"provider": "deepseek-official", "model": "deepseek-v4-flash"}


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def len16(s):
    return len(s.encode("utf-16-le")) // 2


def q(n):
    return (n + 3) // 4


def price_blocks(blocks):
    total = 0
    for b in blocks:
        t = b.get("type")
        if t in ("text", "reasoning"):
            total += q(len16(b["text"])) + 4
        elif t == "tool-call":
            total += q(len16(b["name"])) + q(len16(b["arguments"])) + 4
        elif t == "tool-result":
            total += price_blocks(b["content"]) + 4
        else:
            total += 4 + q(len16(dumps(b)))
    return total


def price_message(m):
    return price_blocks(m["content"]) + 4


class Log:
    def __init__(self, sid, cwd="/home/dev/dsh-demo"):
        self.header = {
            "type": "session",
            "version": 0,
            "id": sid,
            "createdAt": T0,
            "cwd": cwd,
            "delegationDepth": 0,
        }
        self.lines = []  # (text, [events]) per storage record
        self.events = []
        self.turn = 0
        self.step = 0
        self.time = T0
        self.route = ROUTE
        self.system = SYSTEM
        self.tools = TOOLS

    def ev(self, typ, data, **extra):
        self.time += 7
        e = {"type": typ, "seq": len(self.events), "time": self.time, "data": data}
        if "sources" in extra:
            e["sourceEventSeqs"] = extra["sources"]
        if "op" in extra:
            e["surfaceOp"] = extra["op"]
        self.events.append(e)
        self.lines.append(dumps(e))
        return e

    def chunk_run(self, kind, index, pieces, call_id=None, name=None):
        """A run of deltas: packed into one row when there are >= 3."""
        seqs = []
        if len(pieces) >= 3:
            seq0 = len(self.events)
            time0 = self.time + 3
            dt = [2] * (len(pieces) - 1)
            data = {"turn": self.turn, "step": self.step, "index": index}
            if kind == "tool-call-chunks":
                data["id"] = call_id
                if name is not None:
                    data["name"] = name
                data["dt"] = dt
                data["args"] = pieces
            else:
                data["dt"] = dt
                data["texts"] = pieces
            row = {"type": kind, "seq0": seq0, "time0": time0, "data": data}
            self.lines.append(dumps(row))
            t = time0
            for k, p in enumerate(pieces):
                chunk_type = {"text-chunks": "text-delta", "reasoning-chunks": "reasoning-delta", "tool-call-chunks": "tool-call-delta"}[kind]
                c = {"type": chunk_type, "index": index}
                if kind == "tool-call-chunks":
                    c["id"] = call_id
                    if name is not None:
                        c["name"] = name
                    c["argumentsDelta"] = p
                else:
                    c["text"] = p
                e = {"type": "assistant/chunk", "seq": seq0 + k, "time": t, "data": {"turn": self.turn, "step": self.step, "chunk": c}}
                self.events.append(e)
                seqs.append(seq0 + k)
                t += 2 if k < len(pieces) - 1 else 0
            self.time = t
        else:
            for p in pieces:
                chunk_type = {"text-chunks": "text-delta", "reasoning-chunks": "reasoning-delta", "tool-call-chunks": "tool-call-delta"}[kind]
                c = {"type": chunk_type, "index": index}
                if kind == "tool-call-chunks":
                    c["id"] = call_id
                    if name is not None:
                        c["name"] = name
                    c["argumentsDelta"] = p
                else:
                    c["text"] = p
                seqs.append(self.ev("assistant/chunk", {"turn": self.turn, "step": self.step, "chunk": c})["seq"])
        return seqs

    def chunk(self, c):
        return self.ev("assistant/chunk", {"turn": self.turn, "step": self.step, "chunk": c})["seq"]

    def assistant(self, reasoning=None, text=None, calls=(), usage=None):
        """Stream an attempt as chunks, then the assistant/message citing them."""
        seqs = []
        blocks = []
        index = 0
        if reasoning:
            seqs.append(self.chunk({"type": "block-start", "index": index, "blockType": "reasoning"}))
            seqs += self.chunk_run("reasoning-chunks", index, split(reasoning, 4))
            b = {"type": "reasoning", "text": reasoning}
            seqs.append(self.chunk({"type": "block-end", "index": index, "block": b}))
            blocks.append(b)
            index += 1
        if text:
            seqs.append(self.chunk({"type": "block-start", "index": index, "blockType": "text"}))
            seqs += self.chunk_run("text-chunks", index, split(text, 3))
            b = {"type": "text", "text": text}
            seqs.append(self.chunk({"type": "block-end", "index": index, "block": b}))
            blocks.append(b)
            index += 1
        for call_id, name, args in calls:
            seqs.append(self.chunk({"type": "block-start", "index": index, "blockType": "tool-call"}))
            pieces = split(args, 3)
            seqs += self.chunk_run("tool-call-chunks", index, pieces[:1], call_id, name)
            seqs += self.chunk_run("tool-call-chunks", index, pieces[1:], call_id)
            b = {"type": "tool-call", "id": call_id, "name": name, "arguments": args}
            seqs.append(self.chunk({"type": "block-end", "index": index, "block": b}))
            blocks.append(b)
            index += 1
        if usage:
            seqs.append(self.chunk({"type": "usage", "usage": usage}))
        reason = {"kind": "tool-calls"} if calls else {"kind": "stop"}
        seqs.append(self.chunk({"type": "finish", "reason": reason}))
        msg = {"role": "assistant", "content": blocks, "source": {"kind": "model", **self.route}, "id": f"msg-a-{len(self.events)}"}
        data = {"turn": self.turn, "step": self.step, "message": msg}
        if usage:
            data["usage"] = usage
        return self.ev("assistant/message", data, sources=seqs, op="append")

    def tool(self, call_id, name, args, content, is_error=False, meta=None):
        call = self.ev("tool/call", {"turn": self.turn, "step": self.step, "callId": call_id, "name": name, "arguments": args})
        msg = {
            "id": f"msg-r-{call_id}",
            "role": "user",
            "content": [{"type": "tool-result", "toolCallId": call_id, "content": content, "isError": is_error}],
            "source": {"kind": "tool", "callId": call_id},
        }
        data = {"turn": self.turn, "step": self.step, "message": msg}
        if meta is not None:
            data["meta"] = meta
        return self.ev("tool/result", data, sources=[call["seq"]], op="append")

    def user(self, text, uid):
        msg = {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user", "id": uid}
        return self.ev("user/message", msg, op="append")

    def start_turn(self, prompt, uid, header_reason=None, context=False):
        self.turn += 1
        self.step = 0
        msg = {"content": [{"type": "text", "text": prompt}], "source": {"kind": "user"}, "role": "user", "id": uid}
        self.ev("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [msg]})
        self.ev("turn/start", {"turn": self.turn})
        self.ev("agent/inbox/spliced", {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []})
        self.start_step()
        u = self.ev("user/message", msg, op="append")
        if header_reason:
            self.header_event(header_reason)
        if context:
            self.ev("request/context", {**self.route, "contextWindow": 128000})
        return u

    def header_event(self, reason):
        return self.ev("request/header", {"header": {"config": dict(self.route), "system": self.system, "tools": self.tools}, "reason": reason})

    def start_step(self):
        self.step += 1
        self.ev("step/start", {"turn": self.turn, "step": self.step})

    def end_step(self):
        self.ev("step/end", {"turn": self.turn, "step": self.step})

    def end_turn(self, kind="completed"):
        self.ev("turn/end", {"turn": self.turn, "reason": {"kind": kind}})

    def text(self):
        return dumps(self.header) + "\n" + "".join(l + "\n" for l in self.lines)


def split(s, n):
    """Cut s into about n pieces (never empty ones)."""
    size = max(1, math.ceil(len(s) / n))
    return [s[i : i + size] for i in range(0, len(s), size)]


CARGO_TOML = """[package]
name = "dsh-demo"
version = "0.1.0"
edition = "2021"

[dependencies]
serde = { version = "1", features = ["derive"] }
"""

TEST_OUTPUT = "\n".join(
    ["running 14 tests"]
    + [f"test parser::tests::case_{i:02} ... ok" for i in range(13)]
    + ["test parser::tests::unicode_keys ... FAILED", "", "failures:", "", "---- parser::tests::unicode_keys stdout ----",
       "thread 'parser::tests::unicode_keys' panicked at src/parser.rs:88:9:",
       "assertion `left == right` failed", "  left: \"caf\\u{e9}\"", " right: \"café\"", "",
       "test result: FAILED. 13 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s"]
)


def coding_session():
    log = Log("sample-coding-session")
    log.start_turn("The parser test `unicode_keys` fails. Find out why and fix it, please. 🙂", "msg-u-1", "initial", True)
    log.ev("session/title", {"title": "Fix unicode_keys parser test", "messageSeqs": [5], "source": {"kind": "heuristic"}})
    log.assistant(
        reasoning="The user reports a failing test. I should run the test suite first to see the failure.",
        text="Let me run the tests to see the failure.",
        calls=[("call_test_1", "bash", '{"command":"cargo test parser::tests::unicode_keys"}')],
        usage={"inputTokens": 512, "outputTokens": 61, "cacheReadTokens": 1024, "reasoningTokens": 22},
    )
    log.tool("call_test_1", "bash", '{"command":"cargo test parser::tests::unicode_keys"}', [{"type": "text", "text": TEST_OUTPUT + "\n[exit code: 101]"}], is_error=True)
    log.end_step()
    log.start_step()
    log.assistant(
        reasoning="The escape \\u{e9} is not decoded. Read the parser around line 88.",
        calls=[
            ("call_read_2", "read_file", '{"path":"src/parser.rs","offset":60}'),
            ("call_read_3", "read_file", '{"path":"Cargo.toml"}'),
        ],
        usage={"inputTokens": 640, "outputTokens": 48, "cacheReadTokens": 1536},
    )
    src = "\n".join(f"{60 + i:>4}  " + line for i, line in enumerate([
        "fn unescape(s: &str) -> String {", "    let mut out = String::new();", "    let mut chars = s.chars();",
        "    while let Some(c) = chars.next() {", "        if c != '\\\\' { out.push(c); continue; }",
        "        match chars.next() {", "            Some('n') => out.push('\\n'),", "            Some('t') => out.push('\\t'),",
        "            Some(other) => { out.push('\\\\'); out.push(other); }", "            None => out.push('\\\\'),",
        "        }", "    }", "    out", "}"]))
    log.tool("call_read_2", "read_file", '{"path":"src/parser.rs","offset":60}', [{"type": "text", "text": src}], meta={"path": "src/parser.rs", "lines": [60, 73]})
    log.tool("call_read_3", "read_file", '{"path":"Cargo.toml"}', [{"type": "text", "text": CARGO_TOML}])
    log.end_step()
    log.start_step()
    log.assistant(
        text="`unescape` has no branch for `\\u{...}` escapes, so `caf\\u{e9}` stays literal. I will add one that parses the hex digits between the braces and pushes the character.",
        usage={"inputTokens": 910, "outputTokens": 44, "cacheReadTokens": 1536},
    )
    log.end_step()
    log.end_turn()
    # Turn 2: apply the fix, look at a screenshot of the CI page.
    log.start_turn("Go ahead. The CI page shows the same failure, see the screenshot.", "msg-u-2")
    log.assistant(
        text="Applying the fix and checking the screenshot.",
        calls=[
            ("call_edit_4", "bash", '{"command":"python3 tools/patch.py src/parser.rs unicode-escapes"}'),
            ("call_shot_5", "read_file", '{"path":"ci/screenshot.png"}'),
        ],
        usage={"inputTokens": 301, "outputTokens": 52, "cacheReadTokens": 2560},
    )
    log.tool("call_edit_4", "bash", '{"command":"python3 tools/patch.py src/parser.rs unicode-escapes"}', [{"type": "text", "text": "patched src/parser.rs: +9 -0\n[exit code: 0]"}])
    log.tool("call_shot_5", "read_file", '{"path":"ci/screenshot.png"}', [
        {"type": "text", "text": "ci/screenshot.png (PNG, 1280x720)"},
        {"type": "image", "attachment": {"attachmentId": "sha256:" + "5e" * 32, "mediaType": "image/png", "bytes": 48211, "width": 1280, "height": 720, "name": "screenshot.png"}},
    ])
    log.end_step()
    log.start_step()
    log.assistant(
        calls=[("call_test_6", "bash", '{"command":"cargo test"}')],
        usage={"inputTokens": 420, "outputTokens": 20, "cacheReadTokens": 2816},
    )
    log.tool("call_test_6", "bash", '{"command":"cargo test"}', [{"type": "text", "text": "running 14 tests\n" + "".join(f"test parser::tests::case_{i:02} ... ok\n" for i in range(13)) + "test parser::tests::unicode_keys ... ok\n\ntest result: ok. 14 passed; 0 failed\n[exit code: 0]"}])
    log.end_step()
    log.start_step()
    log.assistant(
        text="All 14 tests pass now, including `unicode_keys`. The CI screenshot shows the old run; it will go green on the next push.",
        usage={"inputTokens": 388, "outputTokens": 31, "cacheReadTokens": 3072},
    )
    log.end_step()
    log.end_turn()
    # Turn 3: a question answered without tools.
    log.start_turn("Thanks! Could you summarise the change in one sentence for the commit message?", "msg-u-3")
    log.assistant(
        reasoning="One sentence, imperative mood.",
        text="Decode `\\u{...}` escapes in `unescape` so that non-ASCII keys such as `café` round-trip.",
        usage={"inputTokens": 96, "outputTokens": 30, "cacheReadTokens": 3328},
    )
    log.end_step()
    log.end_turn()
    return log


def compacted():
    """A session where a big tool result was pruned and the first turn compacted."""
    log = Log("sample-compacted")
    log.start_turn("List every module and describe what src/module_07.rs does.", "msg-u-1", "initial", True)
    log.assistant(text="Listing the modules.", calls=[("call_ls_1", "bash", '{"command":"ls -1 src"}')], usage={"inputTokens": 300, "outputTokens": 20, "cacheReadTokens": 512})
    listing = "".join(f"src/module_{i:02}.rs  {'#' * 40}  {i * 137} lines\n" for i in range(400))
    big = log.tool("call_ls_1", "bash", '{"command":"ls -1 src"}', [{"type": "text", "text": listing + "[exit code: 0]"}])
    log.end_step()
    log.start_step()
    log.assistant(text="There are 400 modules; module_07 is one of the parser helpers.", usage={"inputTokens": 5200, "outputTokens": 25, "cacheReadTokens": 512})
    log.end_step()
    log.end_turn()
    # Turn 2: pressure. Prune the big listing, then compact turn 1.
    u2 = log.start_turn("Now open src/module_07.rs and explain it.", "msg-u-2")
    original = big["data"]["message"]["content"][0]["content"][0]["text"]
    cps = list(original)
    pruned = "".join(cps[:4096]) + PRUNE_MARKER + "".join(cps[-1024:])
    old_msg = big["data"]["message"]
    log.ev("compaction/prune", {"shadowedRange": {"start": big["seq"], "end": big["seq"]}, "shadowedSeqs": [big["seq"]], "shadowedTokenCount": price_message(old_msg)})
    new_data = json.loads(dumps(big["data"]))
    new_data["message"]["content"][0]["content"] = [{"type": "text", "text": pruned}]
    rep = log.ev("tool/result", new_data, sources=[big["seq"]], op={"op": "replace", "start": big["seq"], "end": big["seq"]})
    # Surface now: [u1, a1, rep, a2, u2]; compact positions 0..3.
    surface_nodes = [e for e in log.events if "surfaceOp" in e]
    # Recompute the current surface by hand: u1, a1, rep, a2.
    span = [surface_nodes[0], surface_nodes[1], rep, surface_nodes[3]]
    start = log.ev("compaction/start", {"compactionId": "cmp-sample-0001", "turn": log.turn})
    summary = [{"type": "text", "text": "## Primary Request and Intent\nList the 400 modules of the project and describe src/module_07.rs.\n\n## Current Work\nThe listing was produced with `ls -1 src`; module_07 is a parser helper.\n\n## Next Step\nOpen src/module_07.rs and explain it."}]
    tokens = sum(price_message(e["data"] if e["type"] == "user/message" else e["data"]["message"]) for e in span)
    summ = log.ev("compaction/summary", {
        "compactionId": "cmp-sample-0001", "summary": summary,
        "shadowedRange": {"start": span[0]["seq"], "end": span[-1]["seq"]},
        "shadowedSeqs": [e["seq"] for e in span], "shadowedTokenCount": tokens,
        **ROUTE, "maxTokens": 8192, "usage": {"inputTokens": 2100, "outputTokens": 80},
    })
    checkpoint = {
        "id": "msg-checkpoint-1", "role": "user",
        "content": [{"type": "text", "text": PREAMBLE + "\n\n<compacted-summary>"}] + summary + [{"type": "text", "text": "</compacted-summary>"}],
        "source": {"kind": "plugin", "plugin": "compact", "compactionId": "cmp-sample-0001"},
    }
    log.ev("user/message", checkpoint, sources=[start["seq"], summ["seq"]] + [e["seq"] for e in span], op={"op": "replace", "start": span[0]["seq"], "end": span[-1]["seq"]})
    log.ev("compaction/end", {"compactionId": "cmp-sample-0001", "turn": log.turn})
    log.assistant(text="src/module_07.rs holds the tokenizer used by the parser: it splits input into tokens and tracks positions.", usage={"inputTokens": 700, "outputTokens": 30, "cacheReadTokens": 256})
    log.end_step()
    log.end_turn()
    return log


def torn():
    log = Log("sample-torn")
    log.start_turn("Delete the build directory and rebuild.", "msg-u-1", "initial", True)
    log.assistant(
        text="Cleaning and rebuilding.",
        calls=[("call_rm_1", "bash", '{"command":"rm -rf target"}'), ("call_build_2", "bash", '{"command":"cargo build"}')],
        usage={"inputTokens": 200, "outputTokens": 30},
    )
    log.ev("tool/call", {"turn": 1, "step": 1, "callId": "call_rm_1", "name": "bash", "arguments": '{"command":"rm -rf target"}'})
    text = log.text()
    # The crash cut the next line short: no newline at the end.
    return text + '{"type":"tool/result","seq":' + str(len(log.events)) + ',"time":1767225600999,"data":{"turn":1,"st'


def refused():
    log = coding_session()
    lines = log.text().split("\n")
    # Drop one committed line in the middle: a seq gap before later turn/ends.
    del lines[12]
    return "\n".join(lines)


ANTHROPIC_ROUTE = {"provider": "anthropic", "model": "claude-sonnet-4-5"}
GUIDELINES = [
    "Read the relevant code before you change it, and keep each change small enough to review.",
    "Run the narrowest test that covers a change before the whole suite, and report what you ran.",
    "Never invent an API: look it up in the repository or its dependencies first.",
    "Prefer the project's existing helpers and naming to new abstractions.",
    "When a command fails, read its output to the end before trying something else.",
    "Do not touch files outside the workspace, and never print secrets or tokens.",
    "Explain what you changed and why in two or three sentences when you finish.",
    "Ask before deleting files, rewriting history or changing public interfaces.",
]


def anthropic_system(revision):
    head = f"You are dsh-agent (revision {revision}), a careful coding assistant working in a Rust repository.\n\n"
    rules = "".join(f"{i + 1}. {g}\n" for i, g in enumerate(GUIDELINES * 6))
    return head + rules


def anthropic_tools():
    def tool(name, what, props):
        return {
            "name": name,
            "description": f"{what} " + " ".join(f"Note {i}: {g}" for i, g in enumerate(GUIDELINES * 2)),
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        }

    path = {"type": "string", "description": "A path relative to the workspace root."}
    return [
        tool("bash", "Run one shell command in the workspace and return its output.", {"command": {"type": "string", "description": "The command line."}}),
        tool("read_file", "Read a text file from the workspace.", {"path": path}),
        tool("edit_file", "Replace one exact string in a file.", {"path": path, "old": {"type": "string"}, "new": {"type": "string"}}),
        tool("grep", "Search the workspace for a regular expression.", {"pattern": {"type": "string"}}),
    ]


def prompt_tokens(log, surface):
    """The prompt DSH's meter counts: system, tools, every surface message."""
    return (q(len16(log.system)) + 4) + (q(len16(dumps(log.tools))) + 4) + sum(price_message(m) for m in surface)


def anthropic_cache():
    """An Anthropic session with real times: what would cache_control save?"""
    log = Log("sample-anthropic-cache")
    log.route = ANTHROPIC_ROUTE
    log.system = anthropic_system(1)
    log.tools = anthropic_tools()
    surface = []

    def ask(**kw):
        # DSH's adapter sends no cache_control: Anthropic reads and writes
        # nothing, and bills the whole prompt as input.
        text = kw.get("text") or ""
        calls = kw.get("calls", ())
        out = q(len16(text)) + sum(q(len16(a)) + 8 for _, _, a in calls) + 8
        usage = {"inputTokens": prompt_tokens(log, surface), "outputTokens": out, "cacheReadTokens": 0, "cacheWriteTokens": 0}
        e = log.assistant(usage=usage, **kw)
        surface.append(e["data"]["message"])
        return e

    def tool(*args):
        e = log.tool(*args)
        surface.append(e["data"]["message"])
        return e

    def turn(prompt, uid, **kw):
        u = log.start_turn(prompt, uid, **kw)
        surface.append(u["data"])

    turn("The integration tests are slow. Find the slowest one and make it faster.", "msg-u-1", header_reason="initial", context=True)
    ask(text="Timing the integration tests first.", calls=[("call_t1", "bash", '{"command":"cargo test --test it -- -Z unstable-options --report-time"}')])
    timing = "".join(f"test it::case_{i:03} ... ok <{(i * 37) % 900 / 100:.2f}s>\n" for i in range(400))
    big = tool("call_t1", "bash", '{"command":"cargo test --test it -- -Z unstable-options --report-time"}', [{"type": "text", "text": timing + "test it::cache::corpus ... ok <41.70s>\n[exit code: 0]"}])
    log.end_step()
    log.start_step()
    ask(text="`cache::corpus` takes 41.7 s: it re-reads the whole corpus for each of its 12 cases.", calls=[("call_r2", "read_file", '{"path":"tests/it/cache.rs"}')])
    tool("call_r2", "read_file", '{"path":"tests/it/cache.rs"}', [{"type": "text", "text": "".join(f"{i:>4}  // line {i} of the corpus test\n" for i in range(120))}])
    log.end_step()
    log.start_step()
    ask(text="Reading the corpus once and sharing it between the cases should bring it under 5 s.")
    log.end_step()
    log.end_turn()
    # Two minutes later: go ahead. The harness pruned the long timing table.
    log.time += 120_000
    turn("Do it.", "msg-u-2")
    old = big["data"]["message"]
    log.ev("compaction/prune", {"shadowedRange": {"start": big["seq"], "end": big["seq"]}, "shadowedSeqs": [big["seq"]], "shadowedTokenCount": price_message(old)})
    new_data = json.loads(dumps(big["data"]))
    cps = list(new_data["message"]["content"][0]["content"][0]["text"])
    new_data["message"]["content"][0]["content"] = [{"type": "text", "text": "".join(cps[:4096]) + PRUNE_MARKER + "".join(cps[-1024:])}]
    rep = log.ev("tool/result", new_data, sources=[big["seq"]], op={"op": "replace", "start": big["seq"], "end": big["seq"]})
    surface[surface.index(old)] = rep["data"]["message"]
    ask(text="Sharing the corpus with a OnceLock.", calls=[("call_e3", "edit_file", '{"path":"tests/it/cache.rs","old":"let corpus = load();","new":"let corpus = corpus();"}')])
    tool("call_e3", "edit_file", '{"path":"tests/it/cache.rs","old":"let corpus = load();","new":"let corpus = corpus();"}', [{"type": "text", "text": "edited tests/it/cache.rs"}])
    log.end_step()
    log.start_step()
    ask(text="Done: the corpus is read once per run.")
    log.end_step()
    log.end_turn()
    # Twelve minutes later (past 5-minute entries, inside 1-hour ones).
    log.time += 12 * 60_000
    turn("How long does it take now?", "msg-u-3")
    ask(calls=[("call_t4", "bash", '{"command":"cargo test --test it cache::corpus"}')])
    tool("call_t4", "bash", '{"command":"cargo test --test it cache::corpus"}', [{"type": "text", "text": "test it::cache::corpus ... ok <3.90s>\n[exit code: 0]"}])
    log.end_step()
    log.start_step()
    ask(text="3.9 s, down from 41.7 s.")
    log.end_step()
    log.end_turn()
    # A new system prompt revision, a minute later.
    log.time += 60_000
    log.system = anthropic_system(2)
    turn("Commit it with a one-line message.", "msg-u-4", header_reason="change")
    ask(text="tests: read the corpus once per run (cache::corpus 41.7 s -> 3.9 s)")
    log.end_step()
    log.end_turn()
    return log


def overflow_recovery():
    """A request over the window, refused with CONTEXT_WINDOW_EXCEEDED, then
    the overflow path's bracket inside the failed step and the retry
    (compaction §2.6, §2.8, §6.5): the way the harness writes them."""
    log = Log("sample-overflow-recovery")
    window = 12000
    log.start_turn("Read the five parser modules and summarise what each does.", "msg-u-1", "initial")
    log.ev("request/context", {**log.route, "contextWindow": window})
    for i in range(5):
        call = f"call_read_{i}"
        args = json.dumps({"path": f"src/parser_{i}.rs"}, separators=(",", ":"))
        log.assistant(text=f"Reading parser_{i}.rs.", calls=[(call, "read", args)], usage={"inputTokens": 600 + 1500 * i, "outputTokens": 20})
        body = "".join(f"{n:5}\tfn parser_{i}_item_{n}(input: &str) -> Result<Token, Error> {{ todo!() }}\n" for n in range(90))
        log.tool(call, "read", args, [{"type": "text", "text": body[:6000]}])
        log.end_step()
        log.start_step()
    log.assistant(text="Each module parses one part of the grammar.", usage={"inputTokens": 8200, "outputTokens": 15})
    log.end_step()
    log.end_turn()
    turn1 = [e for e in log.events if "surfaceOp" in e]
    # Turn 2: a long pasted prompt takes the request over the window. The
    # pre-step pressure path ran before the prompt was appended, so only the
    # provider's refusal tells.
    paste = "".join(f"error[E0308]: mismatched types at src/parser_{n % 5}.rs:{n}:9 expected `Token`, found `()`\n" for n in range(250))
    log.start_turn("The build fails with these errors, fix them:\n" + paste, "msg-u-2")
    log.chunk({"type": "finish", "reason": {"kind": "error", "failure": {
        "message": f"This model's maximum context length is {window} tokens. However, you requested 14220 tokens (14220 in the messages, 0 in the completion). Please reduce the length of the messages or completion.",
        "code": "CONTEXT_WINDOW_EXCEEDED", "status": 400}}})
    cid = "cmp-sample-overflow-1"
    start = log.ev("compaction/start", {"compactionId": cid, "turn": log.turn})
    summary = [{"type": "text", "text": "## Primary Request and Intent\nRead src/parser_0.rs .. src/parser_4.rs and summarise each.\n\n## Current Work\nAll five modules were read: each parses one part of the grammar.\n\n## Next Step\nFix the mismatched-type errors the user pasted."}]
    tokens = sum(price_message(e["data"] if e["type"] == "user/message" else e["data"]["message"]) for e in turn1)
    summ = log.ev("compaction/summary", {
        "compactionId": cid, "summary": summary, "rawOutput": summary, "llmStreamCall": True,
        "shadowedRange": {"start": turn1[0]["seq"], "end": turn1[-1]["seq"]},
        "shadowedSeqs": [e["seq"] for e in turn1], "shadowedTokenCount": tokens,
        **ROUTE, "maxTokens": 8192, "usage": {"inputTokens": 8100, "outputTokens": 90},
    })
    checkpoint = {
        "content": [{"type": "text", "text": PREAMBLE + "\n\n<compacted-summary>"}] + summary + [{"type": "text", "text": "</compacted-summary>"}],
        "source": {"kind": "plugin", "plugin": "compact", "compactionId": cid},
        "role": "user", "id": "msg-checkpoint-overflow-1",
    }
    log.ev("user/message", checkpoint, sources=[start["seq"], summ["seq"]] + [e["seq"] for e in turn1], op={"op": "replace", "start": turn1[0]["seq"], "end": turn1[-1]["seq"]})
    log.ev("compaction/end", {"compactionId": cid, "turn": log.turn})
    # The retry, in the same step, on the replacement surface.
    log.assistant(text="The functions return `()` where a `Token` is expected; each needs to return `Ok(token)`.", usage={"inputTokens": 3900, "outputTokens": 25})
    log.end_step()
    log.end_turn()
    return log


def write(name, text):
    with open(os.path.join(HERE, name), "w", encoding="utf-8", newline="") as f:
        f.write(text)


def main():
    cs = coding_session()
    write("coding-session.jsonl", cs.text())
    write("compacted.jsonl", compacted().text())
    write("torn.jsonl", torn())
    write("refused.jsonl", refused())
    write("anthropic-cache.jsonl", anthropic_cache().text())
    write("overflow-recovery.jsonl", overflow_recovery().text())
    # Zstandard artifact: header frame, then one frame per turn (a durable batch each).
    text = cs.text().split("\n")[:-1]
    frames = [[text[0]]]
    cur = []
    for line in text[1:]:
        cur.append(line)
        if '"type":"turn/end"' in line:
            frames.append(cur)
            cur = []
    if cur:
        frames.append(cur)
    out = b""
    for fr in frames:
        data = ("\n".join(fr) + "\n").encode("utf-8")
        out += subprocess.run(["zstd", "-q", "-c", "--check", "-19"], input=data, capture_output=True, check=True).stdout
    with open(os.path.join(HERE, "coding-session.jsonl.zstd"), "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main()
