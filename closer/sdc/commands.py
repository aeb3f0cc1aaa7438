"""The SDC subset as data: each command and object query Closer reads, its flags, its options
with their value kinds, and its positional arguments; which timing exception (if any) it is.

Argument syntax follows OpenSTA 2.0.17's own commands (`sta/tcl/Sdc.tcl`); the subset is what the
designs' SDCs use plus the usual I/O and clock-quality settings. Anything else is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from closer.sdc.policy import SdcException


class Kind(StrEnum):
    NUMBER = "number"            # any finite number
    NONNEG = "non-negative"      # finite, >= 0 unless the policy allows negative values
    POSITIVE = "positive"        # finite, > 0
    MULTIPLIER = "multiplier"    # integer >= 1
    NAME = "name"                # one literal name (clock, library cell, pin)
    OBJECTS = "objects"          # an object query, or literal names / patterns
    CLOCK = "clock"              # a clock name or a clock query
    CASE = "case"                # set_case_analysis value


CASE_VALUES = ("0", "1", "zero", "one", "rise", "rising", "fall", "falling")


@dataclass(frozen=True)
class Spec:
    name: str
    flags: frozenset[str] = frozenset()
    options: dict[str, Kind] = field(default_factory=dict)
    repeatable: frozenset[str] = frozenset()             # options that may be given more than once
    required: frozenset[str] = frozenset()               # options that must be given
    positional: tuple[Kind, ...] = ()
    optional: tuple[Kind, ...] = ()                      # trailing positionals that may be left out
    exception: SdcException | None = None                # None: always allowed
    flag_exceptions: dict[str, SdcException] = field(default_factory=dict)


_RF = frozenset({"-rise", "-fall"})
_MINMAX = frozenset({"-min", "-max"})
_PATH = {"-from": Kind.OBJECTS, "-to": Kind.OBJECTS, "-through": Kind.OBJECTS,
         "-rise_from": Kind.OBJECTS, "-fall_from": Kind.OBJECTS, "-rise_to": Kind.OBJECTS,
         "-fall_to": Kind.OBJECTS, "-rise_through": Kind.OBJECTS, "-fall_through": Kind.OBJECTS}
_THROUGH = frozenset({"-through", "-rise_through", "-fall_through"})
_IO_DELAY_FLAGS = _RF | _MINMAX | {"-clock_fall", "-add_delay", "-network_latency_included",
                                   "-source_latency_included"}


def _specs(*specs: Spec) -> dict[str, Spec]:
    return {s.name: s for s in specs}


COMMANDS: dict[str, Spec] = _specs(
    Spec("create_clock", flags=frozenset({"-add"}),
         options={"-name": Kind.NAME, "-period": Kind.POSITIVE},
         required=frozenset({"-period"}), positional=(Kind.OBJECTS,),
         flag_exceptions={"-add": SdcException.EXTRA_CLOCKS}),
    Spec("set_input_delay", flags=_IO_DELAY_FLAGS, options={"-clock": Kind.CLOCK},
         positional=(Kind.NONNEG, Kind.OBJECTS)),
    Spec("set_output_delay", flags=_IO_DELAY_FLAGS, options={"-clock": Kind.CLOCK},
         positional=(Kind.NONNEG, Kind.OBJECTS)),
    Spec("set_load", flags=_MINMAX | {"-pin_load", "-wire_load", "-subtract_pin_load"},
         positional=(Kind.NONNEG, Kind.OBJECTS)),
    Spec("set_driving_cell", flags=_RF | _MINMAX | {"-dont_scale", "-no_design_rule"},
         options={"-lib_cell": Kind.NAME, "-cell": Kind.NAME, "-library": Kind.NAME,
                  "-pin": Kind.NAME, "-from_pin": Kind.NAME,
                  "-input_transition_rise": Kind.NONNEG, "-input_transition_fall": Kind.NONNEG},
         positional=(Kind.OBJECTS,)),
    Spec("set_clock_uncertainty", flags=frozenset({"-setup", "-hold"}),
         positional=(Kind.NONNEG,), optional=(Kind.OBJECTS,)),
    Spec("set_clock_transition", flags=_RF | _MINMAX, positional=(Kind.NONNEG, Kind.OBJECTS)),
    Spec("set_input_transition", flags=_RF | _MINMAX, positional=(Kind.NONNEG, Kind.OBJECTS)),
    # design-rule limits: OpenSTA checks the tightest of these and the Liberty limits
    Spec("set_max_transition", flags=_RF | {"-clock_path", "-data_path"},
         positional=(Kind.POSITIVE, Kind.OBJECTS)),
    Spec("set_max_capacitance", positional=(Kind.POSITIVE, Kind.OBJECTS)),
    Spec("set_max_fanout", positional=(Kind.POSITIVE, Kind.OBJECTS)),
    # timing exceptions: refused unless the policy allows them
    Spec("set_false_path", flags=_RF | {"-setup", "-hold"}, options=_PATH, repeatable=_THROUGH,
         exception=SdcException.FALSE_PATH),
    Spec("set_multicycle_path", flags=_RF | {"-setup", "-hold", "-start", "-end"}, options=_PATH,
         repeatable=_THROUGH, positional=(Kind.MULTIPLIER,),
         exception=SdcException.MULTICYCLE_PATH),
    Spec("set_max_delay", flags=_RF | {"-ignore_clock_latency"}, options=_PATH,
         repeatable=_THROUGH, positional=(Kind.NUMBER,), exception=SdcException.MAX_DELAY),
    Spec("set_min_delay", flags=_RF | {"-ignore_clock_latency"}, options=_PATH,
         repeatable=_THROUGH, positional=(Kind.NUMBER,), exception=SdcException.MIN_DELAY),
    Spec("set_disable_timing", options={"-from": Kind.NAME, "-to": Kind.NAME},
         positional=(Kind.OBJECTS,), exception=SdcException.DISABLE_TIMING),
    Spec("set_case_analysis", positional=(Kind.CASE, Kind.OBJECTS),
         exception=SdcException.CASE_ANALYSIS),
    Spec("set_clock_groups", flags=frozenset({"-asynchronous", "-logically_exclusive",
                                              "-physically_exclusive", "-allow_paths"}),
         options={"-name": Kind.NAME, "-group": Kind.OBJECTS}, repeatable=frozenset({"-group"}),
         exception=SdcException.CLOCK_GROUPS),
    Spec("set_clock_latency", flags=_RF | _MINMAX | {"-source", "-early", "-late"},
         options={"-clock": Kind.CLOCK}, positional=(Kind.NONNEG, Kind.OBJECTS),
         exception=SdcException.CLOCK_LATENCY),
)

_NAMES = (Kind.OBJECTS,)
QUERIES: dict[str, Spec] = _specs(
    Spec("get_ports", flags=frozenset({"-quiet"}), positional=_NAMES),
    Spec("get_pins", flags=frozenset({"-quiet", "-hierarchical"}), positional=_NAMES),
    Spec("get_cells", flags=frozenset({"-quiet", "-hierarchical"}), positional=_NAMES),
    Spec("get_nets", flags=frozenset({"-quiet", "-hierarchical"}), positional=_NAMES),
    Spec("get_clocks", flags=frozenset({"-quiet"}), positional=_NAMES),
    Spec("current_design"),
    Spec("all_inputs", flags=frozenset({"-no_clocks"})),
    Spec("all_outputs"),
    Spec("all_clocks"),
    Spec("all_registers", flags=frozenset({"-clock_pins", "-data_pins", "-output_pins",
                                           "-async_pins", "-edge_triggered", "-level_sensitive"}),
         options={"-clock": Kind.OBJECTS}),
    Spec("delete_from_list", positional=(Kind.OBJECTS, Kind.OBJECTS)),
    Spec("remove_from_collection", positional=(Kind.OBJECTS, Kind.OBJECTS)),
)
# OpenSTA 2.0.17 has no remove_from_collection; delete_from_list does the same
QUERY_EMIT_AS = {"remove_from_collection": "delete_from_list"}
CLOCK_QUERIES = frozenset({"get_clocks", "all_clocks"})
BASE_COMMANDS = tuple(name for name, spec in COMMANDS.items() if spec.exception is None)
EXCEPTION_COMMANDS = {spec.exception: name for name, spec in COMMANDS.items() if spec.exception}
