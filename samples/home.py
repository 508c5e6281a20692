#!/usr/bin/env python3
"""Write samples/home/: a small DSH home for `dsh sessions` and `dsh usage`.

Run from the repository root: `python3 samples/home.py` (after
samples/generate.py). Five of the hand-authored samples are laid out as the
DSH JSONL backend keeps sessions (`sessions/--<cwd>--/<id>/session.jsonl`),
each with its own id and cwd and its plausible times moved to a later date
(times are informational; zeros stay zeros), so that the requests fall into
the price table's dated entries:

  3f6c2a91… coding-session   /home/dev/dsh-demo   2026-07-06, three turns
  8b12e4d0… compacted        /home/dev/dsh-demo   2026-07-07, a compaction (the
                                                   summariser's call), deepseek-v4-pro
  c47a9e15… verify-clean     /home/dev/api        2026-11-24, two compactions,
                                                   DeepSeek off-peak time
  e905b3c8… locks-busy       /home/dev/api        2026-11-27, a busy lock
  1da8f7b2… measure-example  /home/dev/notes      a normalised header time (0):
                                                   started unknown
"""

import json
import os
import re
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
DAY = 86_400_000
HOUR = 3_600_000

SESSIONS = [
    ("coding-session", "3f6c2a91-7d4e-4b1a-9c55-0e8b2d7f1a01", "/home/dev/dsh-demo", 186 * DAY + 8 * HOUR, {}),
    ("compacted", "8b12e4d0-5a3f-4e6b-8d21-6c9f0a4b2e02", "/home/dev/dsh-demo", 187 * DAY + 14 * HOUR,
     {"deepseek-v4-flash": "deepseek-v4-pro"}),
    ("verify-clean", "c47a9e15-2b8d-4f03-a6e4-91d3b5c8f703", "/home/dev/api", 180 * DAY, {}),
    ("locks-busy", "e905b3c8-61fa-4d27-b4e9-2a7c6d1e0f04", "/home/dev/api", 330 * DAY + 9 * HOUR, {}),
    ("measure-example", "1da8f7b2-9c04-4e5d-83b6-f4e2a1c9d505", "/home/dev/notes", 870 * DAY, {}),
]


def project_dir(cwd):
    name = re.sub(r"[/\\:]+", "-", cwd).lstrip("-") or "root"
    return "--" + name + "--"


def shift(v, by):
    return v + by if isinstance(v, int) and v > 946_684_800_000 else v


def main():
    root = os.path.join(HERE, "home")
    shutil.rmtree(root, ignore_errors=True)
    for sample, sid, cwd, by, models in SESSIONS:
        with open(os.path.join(HERE, sample + ".jsonl"), encoding="utf-8") as f:
            text = f.read()
        for old, new in models.items():
            text = text.replace('"' + old + '"', '"' + new + '"')
        lines = text.split("\n")
        out = []
        for i, line in enumerate(lines):
            if not line:
                out.append(line)
                continue
            v = json.loads(line)
            if i == 0:
                v["id"] = sid
                v["cwd"] = cwd
                v["createdAt"] = shift(v["createdAt"], by)
            else:
                for k in ("time", "time0"):
                    if k in v:
                        v[k] = shift(v[k], by)
            out.append(json.dumps(v, ensure_ascii=False, separators=(",", ":")))
        d = os.path.join(root, "sessions", project_dir(cwd), sid)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "session.jsonl"), "w", encoding="utf-8") as f:
            f.write("\n".join(out))


if __name__ == "__main__":
    main()
