"""Surgery on the NETS of a routed DEF as qrouter writes it: a net's entry ("- name", its
connections, "+ ROUTED" wiring up to ";") and the pin stubs qrouter writes after END NETS as a
SPECIALNETS section of entries named after their nets."""

from __future__ import annotations

import re


def net_blocks(text: str) -> tuple[int, int, list[str]]:
    """(start, end, entries) of the NETS section; the first entry is the section header."""
    start = text.index("\nNETS ")
    end = text.index("END NETS", start)
    return start, end, re.split(r"\n(?=- )", text[start:end])


def block_name(block: str) -> str | None:
    m = re.match(r"- (\S+)", block)
    return m.group(1) if m else None


def stubs(text: str) -> list[str]:
    """The stub entries after END NETS: qrouter writes each net's pin stubs as a SPECIALNETS
    section there, and copies the stubs of the DEF it read after its own (so a reroute's output
    has two such sections)."""
    tail = text[text.index("END NETS") + len("END NETS"):].rsplit("END DESIGN", 1)[0]
    body = re.sub(r"^\s*(SPECIALNETS\s+\d+\s*;|END SPECIALNETS)\s*$", "", tail, flags=re.M)
    return [b.strip() for b in re.split(r"\n(?=- )", body) if b.strip().startswith("- ")]


def with_stubs(text: str, entries: list[str]) -> str:
    """`text` with its stub section replaced by `entries` (one section, as a first route writes it)."""
    end = text.index("END NETS")
    section = f"SPECIALNETS {len(entries)} ;\n" + "\n".join(entries) + "\n" if entries else ""
    return text[:end] + "END NETS\n\n" + section + "END DESIGN\n"


def wiring(block: str) -> str:
    """An entry's wiring: what follows its first "+ ROUTED" up to the closing ";" ("" if none)."""
    cut = block.find("+ ROUTED")
    if cut < 0:
        return ""
    return block[cut + len("+ ROUTED"):].strip().removesuffix(";").rstrip()


_PIECE_TOKENS = re.compile(r"\(\s*(\S+)\s+(\S+)(?:\s+\S+)?\s*\)|([A-Za-z]\w*)")


def wire_segments(block: str) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """An entry's wires as (layer, (x1, y1), (x2, y2)), `*` resolved; a piece's path stops at its
    first via (qrouter starts every layer change as a NEW piece)."""
    out = []
    for piece in re.split(r"\+\s*ROUTED|\bNEW\b", block)[1:]:
        layer, prev = None, None
        for xs, ys, word in _PIECE_TOKENS.findall(piece):
            if word:
                if layer is not None:
                    break  # a via name: the rest of the path is on another layer
                layer = word
                continue
            if prev is None and "*" in (xs, ys):
                break
            point = (prev[0] if xs == "*" else int(xs), prev[1] if ys == "*" else int(ys))
            if prev is not None and layer is not None:
                out.append((layer, prev, point))
            prev = point
    return out
