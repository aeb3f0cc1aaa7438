"""The `closer-tool` section of a task's instructions, rendered with the task's real numbers.

The task builder embeds `agent_instructions(config, budget)` in the task's instruction.md so the
agent learns the command names, what each class runs, its budget and the exit codes.
"""

from __future__ import annotations

from closer.budget import Budget, ToolClass
from closer.metered.config import ToolConfig
from closer.metered.front import EXIT_CODES

WHAT = {
    ToolClass.SIM: "simulation of the current RTL",
    ToolClass.SYNTH: "synthesis and/or static timing analysis",
    ToolClass.PNR: "a full place-and-route run",
    ToolClass.VERIFY: "the final verifier (the check your work is scored by)",
}


def agent_instructions(config: ToolConfig, budget: Budget) -> str:
    rows = []
    for tool in ToolClass:
        if tool not in config.tools:
            continue
        cap = budget.cap(tool)
        rows.append(f"| `closer-tool {tool.value}` | {WHAT[tool]} | "
                    f"{'uncapped' if cap is None else cap} | {budget.weights.of(tool):g} |")
    codes = ", ".join(f"{code} {outcome.value}" for outcome, code in EXIT_CODES.items())
    return "\n".join([
        "## Tools",
        "",
        "Expensive steps run only through `closer-tool`; every call is counted, limited and recorded.",
        "",
        "| command | runs | calls allowed | cost units |",
        "|---|---|---:|---:|",
        *rows,
        "",
        f"The whole run has {budget.wall_s / 3600:g} h of wall clock (tier `{budget.tier}`). "
        "`closer-tool status` shows what is left and costs nothing. A call over a class's cap or "
        "past the wall clock is refused (and recorded). Arguments after the class name are passed "
        "to the step where the task allows it. Each call prints the log tails, the public metrics, "
        "the public reward estimate and the budget left; its full outputs are under `results/`.",
        "",
        f"Exit codes: {codes}; 2 means bad usage or configuration.",
        "",
    ])
