"""Flow settings of the synthesis step: the typed knobs a design's `[physical]` table (and a task
B/C workspace's `flow/settings.toml`) may set, and the ABC script they select.

`SynthSettings` is the declaration (closer.designs.model.Physical inherits its fields, so the
settings reach the flow the way `router_passes` does); `abc_scripts` turns it into the scripts
`yosys abc -script +...` runs against the synthesis corner's Liberty, in the order synthesis
tries them (the second only when ABC's estimate of the first misses the delay target:
closer.flow.synth_choice; `abc_script` is the first); `settings_table_markdown`
renders the table of docs/flow.md from the declarations (tests compare the two).

What ABC does with them (ABC's `scl` package, the commands OpenLane's synthesis scripts use):
`&nf {D}` maps for delay with area recovery up to the delay target D; `buffer -N n -p` builds
fanout trees so that no gate (flop outputs included: `-p` buffers ABC's primary inputs) drives
more than n pins; `upsize {D}` sizes up gates on paths slower than D, `dnsize {D}` sizes down the
rest while keeping D. D is the SDC clock period minus `synth_delay_margin` of it (SiliconCompiler's
`abc_clock_derating`), because ABC sees only the logic between flops, not clock-to-Q, setup, IO
delays or wires.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class SynthStrategy(StrEnum):
    BALANCED = "balanced"  # depth-balancing restructuring first, then the `area` mapping
    AREA = "area"     # one delay-aware mapping with area recovery up to the delay target
    DELAY = "delay"   # ORFS's abc_speed: repeated AIG restructuring and mapping, then the same


# the mapping part of each strategy; `{D}` is the delay target (Yosys fills in `-D <ps>`)
_MAPPING: dict[SynthStrategy, list[str]] = {
    # `&if -g` (SOP balancing) and `&synch2` rebuild deep chains (a ripple comparator) for depth,
    # which choices and `&nf` alone never do; then the same choice mapping as `area`
    SynthStrategy.BALANCED: ["strash", "&get -n", "&st", "&if -g -K 6", "&synch2", "&put",
                             "strash", "&get -n", "&dch -f", "&nf {D}", "&put"],
    # Yosys's own script for a Liberty with constraints (abc.cc ABC_COMMAND_CTR, mapping part)
    SynthStrategy.AREA: ["strash", "&get -n", "&fraig -x", "&put", "scorr", "dc2", "dretime",
                         "strash", "&get -n", "&dch -f", "&nf {D}", "&put"],
    # ORFS flow/scripts/abc_speed.script (the loop 3 times here: gcd-sized designs converge)
    SynthStrategy.DELAY: ["&get -n", "&st", "&dch", "&nf {D}", "&put",
                          *(["&get -n", "&st", "&syn2", "&if -g -K 6", "&synch2", "&nf {D}",
                             "&put"] * 3)],
}


# a strategy's second script, run only when ABC's estimate of the first misses the delay target
# (closer.flow.synth_choice). `balanced`: `&syn2` rewriting before the balancing (gcd at 5 ns: ss
# 4.39 -> 3.49 ns of logic, area +4 %). Not the first script: on a design the first already
# closes it only changes the netlist (the weak gcd with it did not route at the B task's hidden
# placer seed, docs/physical.md)
_RESTRUCTURED: dict[SynthStrategy, list[str]] = {
    SynthStrategy.BALANCED: ["strash", "&get -n", "&st", "&syn2", "&if -g -K 6", "&synch2", "&put",
                             "strash", "&get -n", "&dch -f", "&nf {D}", "&put"],
}
RESTRUCTURED_SUFFIX = "+syn2"  # the second script's name: `<strategy>+syn2`
# how the synthesized netlist names a flattened instance's wires and cells (`u_wr/q_mem[3]`): the
# synthesis node sets it, and the LEC flattens the RTL with it so that registers pair by name
HIERARCHY_SEPARATOR = "/"


@dataclass(frozen=True)
class AbcScript:
    name: str    # the strategy's value, `<strategy>+syn2` for its second script
    script: str  # Yosys's inline form (`+cmd,arg;cmd...`)


class SynthSettings(BaseModel):
    """Synthesis settings (flow/settings.toml keys)."""

    model_config = ConfigDict(extra="forbid")
    synth_strategy: SynthStrategy = Field(
        SynthStrategy.BALANCED, strict=False,  # a TOML string names the member, also in strict models
        description="ABC mapping script: `balanced` (`&if -g` depth balancing, then the `area` "
        "mapping; when ABC's delay estimate misses the target, again with `&syn2` rewriting first, "
        "kept if it meets it or is faster), `area` (Yosys's delay-targeted `&nf` with area recovery) or `delay` (ORFS's "
        "abc_speed restructuring loop, more area)")
    synth_buffering: bool = Field(
        True, description="ABC `buffer -N max_fanout -p`: fanout trees on every net with more "
        "than max_fanout pins, flop outputs and inputs included")
    synth_sizing: bool = Field(
        True, description="ABC `upsize {D}` / `dnsize {D}`: gate sizes against the Liberty for "
        "the delay target")
    max_fanout: int = Field(
        7, ge=2, le=64, description="most pins one gate output may drive after buffering (ABC "
        "`buffer -N`)")
    synth_delay_margin: float = Field(
        0.3, ge=0.0, le=0.9, description="fraction of the SDC clock period kept out of ABC's "
        "delay target D (for clock-to-Q, setup, IO delays and wires ABC does not see)")

    def synth_values(self) -> dict:
        return {name: getattr(self, name) for name in SynthSettings.model_fields}


def abc_script(settings: SynthSettings) -> str:
    """The ABC script of `settings` in Yosys's inline form (`+cmd,arg;cmd...`: `,` for spaces)."""
    return abc_scripts(settings)[0].script


def abc_scripts(settings: SynthSettings) -> list[AbcScript]:
    """The scripts synthesis tries in order: the strategy's, then its restructured one if it has
    one (run only when the one before misses the delay target)."""
    strategy = settings.synth_strategy
    scripts = [AbcScript(strategy.value, _inline(_MAPPING[strategy], settings))]
    if strategy in _RESTRUCTURED:
        scripts.append(AbcScript(strategy.value + RESTRUCTURED_SUFFIX, _inline(_RESTRUCTURED[strategy], settings)))
    return scripts


def _inline(mapping: list[str], settings: SynthSettings) -> str:
    commands = list(mapping)
    if settings.synth_buffering:
        commands.append(f"buffer -N {settings.max_fanout} -p")
    if settings.synth_sizing:
        commands += ["upsize {D}", "dnsize {D}"]
    commands.append("stime -p")
    return "+" + ";".join(c.replace(" ", ",") for c in commands)


def settings_table_markdown() -> str:
    """The flow-settings table of docs/flow.md, rendered from the declarations."""
    from closer.designs.model import Physical

    lines = ["| key | type | range | default | meaning |", "| --- | --- | --- | --- | --- |"]
    for name, field in Physical.model_fields.items():
        if name in _CONDITION_KEYS:
            continue
        default = field.default.value if isinstance(field.default, StrEnum) else field.default
        kind = getattr(field.annotation, "__name__", str(field.annotation))
        if isinstance(field.default, StrEnum):
            kind = " \\| ".join(f"`{m.value}`" for m in type(field.default))
        lines.append(f"| `{name}` | {kind} | {_range(field)} | `{_toml(default)}` | {field.description} |")
    return "\n".join(lines) + "\n"


_CONDITION_KEYS = ("corners", "place_seed")  # set by a task's conditions, never a setting


def _range(field) -> str:
    """`lo..hi` from the field's bounds (`>` for an exclusive lower bound), `-` when unbounded."""
    names = {"Gt": "gt", "Ge": "ge", "Lt": "lt", "Le": "le"}
    bounds = {type(m).__name__: getattr(m, names[type(m).__name__]) for m in field.metadata
              if type(m).__name__ in names}
    low = f"> {bounds['Gt']}" if "Gt" in bounds else bounds.get("Ge")
    high = bounds.get("Le", bounds.get("Lt"))
    if low is None and high is None:
        return "-"
    return f"{low if low is not None else ''}..{high if high is not None else ''}"


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
