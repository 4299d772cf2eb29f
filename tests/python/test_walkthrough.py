# SPDX-License-Identifier: Apache-2.0
"""docs/python.md works as printed: its python blocks run in order against a test server and
print what the document shows under them (walkthrough.py)."""
import os

import walkthrough


def test_walkthrough_runs_as_printed(server, source_dir):
    doc = os.path.join(source_dir, "docs", "python.md")
    blocks = walkthrough.parse(open(doc).read())
    assert len(blocks) >= 10
    outputs = walkthrough.run(blocks, server.addr)
    mismatches = []
    for b, out in zip(blocks, outputs):
        if not walkthrough.output_matches(b.expected, out):
            mismatches.append(f"docs/python.md:{b.code_line}: expected\n{b.expected}\n--- got\n{out}")
    assert not mismatches, "\n\n".join(mismatches)
