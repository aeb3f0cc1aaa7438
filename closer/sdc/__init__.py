"""SDC as data: a parser of the SDC subset a task allows, and the canonical SDC OpenSTA reads.

    sdc = write_canonical(agent_sdc, run_dir / "constraints.sdc", SdcPolicy(allow={...}))

No Tcl is evaluated: the lexer (`lexer.py`) reads words and object queries only, the parser
(`parser.py`) accepts the commands and queries listed in `commands.py` with literal arguments, and
the canonical text is rebuilt from the parsed values. Timing exceptions (`policy.SdcException`)
are refused unless the policy allows them. docs/security.md ("SDC as data") lists the subset.
"""

from closer.sdc.commands import BASE_COMMANDS, COMMANDS, EXCEPTION_COMMANDS, QUERIES
from closer.sdc.parser import Sdc, SdcCommand, SdcError, parse_sdc, parse_sdc_text, write_canonical
from closer.sdc.policy import SdcException, SdcPolicy

__all__ = ["BASE_COMMANDS", "COMMANDS", "EXCEPTION_COMMANDS", "QUERIES", "Sdc", "SdcCommand",
           "SdcError", "SdcException", "SdcPolicy", "parse_sdc", "parse_sdc_text",
           "write_canonical"]
