"""The SDC subset as Markdown tables (docs/security.md "SDC as data"; a test keeps them current)."""

from __future__ import annotations

from closer.sdc.commands import COMMANDS, QUERIES, Spec


def _arguments(spec: Spec) -> str:
    parts = [f"`{f}`" for f in sorted(spec.flags)]
    parts += [f"`{o} <{k.value}>`" + (" (repeatable)" if o in spec.repeatable else "")
              for o, k in spec.options.items()]
    parts += [f"<{k.value}>" for k in spec.positional] + [f"[<{k.value}>]" for k in spec.optional]
    return " ".join(parts) or "(none)"


def subset_markdown() -> str:
    lines = ["| command | arguments | refused unless the task allows |", "|---|---|---|"]
    for name, spec in COMMANDS.items():
        needs = [f"`{spec.exception}`"] if spec.exception else []
        needs += [f"`{flag}`: `{exc}`" for flag, exc in spec.flag_exceptions.items()]
        lines.append(f"| `{name}` | {_arguments(spec)} | {', '.join(needs) or '—'} |")
    lines += ["", "| object query | arguments |", "|---|---|"]
    lines += [f"| `[{name} …]` | {_arguments(spec)} |" for name, spec in QUERIES.items()]
    return "\n".join(lines) + "\n"
