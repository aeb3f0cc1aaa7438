"""Regenerate the tables in docs/reward.md from the declarations (gates, metric keys, derived).

    python -m closer.reward.docs

Each table sits between `<!-- generated:NAME -->` and `<!-- end:NAME -->`; text outside the
markers is left alone.
"""

from __future__ import annotations

import re

from closer.metrics import markdown_tables
from closer.paths import repo_paths
from closer.reward.gates import gate_table_markdown

GENERATED = {"gates": gate_table_markdown, "metrics": markdown_tables}


def regenerate(text: str) -> str:
    for name, render in GENERATED.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n).*?(<!-- end:{name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"docs/reward.md has no <!-- generated:{name} --> block")
        text = pattern.sub(lambda m: m.group(1) + render() + m.group(2), text)
    return text


if __name__ == "__main__":
    path = repo_paths().docs / "reward.md"
    path.write_text(regenerate(path.read_text(encoding="utf-8")), encoding="utf-8")
    print(path)
