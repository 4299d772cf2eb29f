# SPDX-License-Identifier: Apache-2.0
"""Runs the walkthrough of docs/python.md like a notebook: every ```python block, in order, in
one namespace, with its output compared to the ```text block right after it (no text block:
no output expected). In expected output, "..." matches any text within a line (addresses,
versions, timings).

  walkthrough.py --server HOST:PORT [--write] [--doc docs/python.md]

prints each block's output, or with --write puts it into the document (keeping the "..." of
lines that still match). test_walkthrough.py runs the same against a test server; the target
"127.0.0.1:50051" in the code is replaced by that server's address.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
import traceback
from dataclasses import dataclass
from typing import List, Optional

DEFAULT_TARGET = "127.0.0.1:50051"
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass
class Block:
    code: str
    code_line: int                 # 1-based line of the opening ```python
    expected: Optional[str]        # the ```text block after it, if any
    expected_span: Optional[tuple]  # (first, last) line index of that block's fences


def parse(text: str) -> List[Block]:
    lines = text.split("\n")
    fences = []  # (language, start index, end index, body)
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j].rstrip() != "```":
                j += 1
            fences.append((m.group(1), i, j, "\n".join(lines[i + 1:j])))
            i = j + 1
        else:
            i += 1
    blocks: List[Block] = []
    for k, (lang, start, end, body) in enumerate(fences):
        if lang != "python":
            continue
        expected, span = None, None
        if k + 1 < len(fences) and fences[k + 1][0] == "text":
            _, s2, e2, body2 = fences[k + 1]
            if all(not lines[x].strip() for x in range(end + 1, s2)):
                expected, span = body2, (s2, e2)
        blocks.append(Block(body, start + 1, expected, span))
    return blocks


def line_matches(expected: str, actual: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


def output_matches(expected: Optional[str], actual: str) -> bool:
    exp = (expected or "").rstrip("\n").split("\n") if expected else []
    act = actual.rstrip("\n").split("\n") if actual.strip() else []
    return len(exp) == len(act) and all(line_matches(e, a) for e, a in zip(exp, act))


def run(blocks: List[Block], target: str) -> List[str]:
    """Executes the blocks in order; returns each one's stdout. Raises on the first error,
    naming the block's line."""
    namespace = {"__name__": "__walkthrough__"}
    outputs = []
    for b in blocks:
        out = io.StringIO()
        code = b.code.replace(DEFAULT_TARGET, target)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"docs/python.md:{b.code_line}", "exec"), namespace)
        except Exception:
            raise RuntimeError(f"the block at docs/python.md:{b.code_line} failed:\n{traceback.format_exc()}")
        outputs.append(out.getvalue())
    return outputs


def write(text: str, blocks: List[Block], outputs: List[str]) -> str:
    """The document with each block's output in the text block after it."""
    lines = text.split("\n")
    # From the end, so that earlier indices stay valid.
    for b, out in reversed(list(zip(blocks, outputs))):
        actual = out.rstrip("\n").split("\n") if out.strip() else []
        if b.expected_span:
            old = (b.expected or "").split("\n")
            if len(old) == len(actual):
                actual = [o if line_matches(o, a) else a for o, a in zip(old, actual)]
            s, e = b.expected_span
            lines[s:e + 1] = (["```text", *actual, "```"] if actual else [])
        elif actual:
            end = b.code_line  # the first line after the opening fence
            while lines[end].rstrip() != "```":
                end += 1
            lines[end + 1:end + 1] = ["", "```text", *actual, "```"]
    return "\n".join(lines)


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=DEFAULT_TARGET)
    ap.add_argument("--doc", default=os.path.join(here, "..", "..", "docs", "python.md"))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    text = open(args.doc).read()
    blocks = parse(text)
    outputs = run(blocks, args.server)
    if args.write:
        with open(args.doc, "w") as f:
            f.write(write(text, blocks, outputs))
    else:
        for b, out in zip(blocks, outputs):
            print(f"--- docs/python.md:{b.code_line} ({'matches' if output_matches(b.expected, out) else 'DIFFERS'})")
            print(out, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
