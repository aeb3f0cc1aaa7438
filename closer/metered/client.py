"""`closer-tool` inside a sandbox: a thin client of the metering broker (closer.metered.broker).

It imports nothing of the metering itself, nor the json and socket packages (their start-up
costs more than a status may take; closer.lightjson and the C `_socket` instead): it sends one
request over the socket named by $CLOSER_BROKER, prints the progress and the answer, and exits
with the call's exit code. The ledger, the budget and the tools are on the other side of it.
"""

from __future__ import annotations

import os
import sys

from closer import lightjson as json  # loads and dumps without the json package's start-up cost

TYPE_CHECKING = False  # typing's and collections' imports are part of the start-up cost avoided
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

BROKER_ENV = "CLOSER_BROKER"
EXIT_INFRA = 13
TOOLS = ("sim", "synth", "pnr", "verify")
USAGE = """usage: closer-tool sim|synth|pnr|verify [ARGS...]   run a metered tool class on the workspace
       closer-tool status [--json]                  budget left; spends nothing

Every call is counted, limited and recorded. Exit codes: 0 ok, 1 tool error, 10 refused
(class budget spent), 11 refused (wall clock spent), 12 tool timed out, 13 infrastructure
error, 2 bad usage."""


def broker_path() -> str | None:
    return os.environ.get(BROKER_ENV) or None


def main(argv: list[str]) -> int:
    argv = [a for a in argv if a not in ("-w", "--workspace")]  # the workspace is the broker's
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "status":
        answer = _ask({"op": "status"})
        if answer.get("exit_code") == 0 and "status" in answer:
            print(json.dumps(answer["status"], indent=2) if "--json" in rest else format_status(answer["status"]))
        else:
            print(answer.get("output", ""))
        return int(answer.get("exit_code", EXIT_INFRA))
    if command not in TOOLS:
        print(f"closer-tool: unknown command {command!r}\n{USAGE}", file=sys.stderr)
        return 2
    answer = _ask({"op": "call", "tool": command, "args": rest})
    print(answer.get("output", ""))
    return int(answer.get("exit_code", EXIT_INFRA))


def _ask(request: dict) -> dict:
    answer = ask(request, broker_path() or "")
    assert answer is not None
    return answer


def ask(request: dict, path: str, fallback: bool = False) -> dict | None:
    """The broker's answer to `request`. With `fallback` (a standalone workspace's daemon,
    closer.metered.daemon), None when the broker did not take the request: nothing listening, or
    the connection closed before the broker acknowledged it."""
    import _socket  # here: a standalone status never needs it

    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            conn.connect(path)
            conn.sendall(json.dumps(request).encode() + b"\n")
            return _read_answer(_lines(conn), fallback)
        finally:
            conn.close()
    except OSError as exc:
        if fallback:
            return None
        return {"exit_code": EXIT_INFRA, "output": f"closer-tool: the metering broker at {path} is not "
                                                   f"reachable ({exc.strerror or exc})"}


def _lines(conn) -> Iterator[bytes]:
    """The connection's newline-terminated messages (the last may lack its newline)."""
    pending = b""
    while chunk := conn.recv(1 << 16):
        *complete, pending = (pending + chunk).split(b"\n")
        yield from complete
    if pending:
        yield pending


def _read_answer(stream: Iterable[bytes], fallback: bool = False) -> dict | None:
    accepted = False
    for raw in stream:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if message.get("type") == "accepted":
            accepted = True
        elif message.get("type") == "progress":
            print(f"[closer-tool] still running ({message.get('elapsed_s')} s)", flush=True)
        elif message.get("type") == "result":
            return message
    if fallback and not accepted:
        return None
    return {"exit_code": EXIT_INFRA, "output": "closer-tool: the metering broker closed the connection "
                                               "without an answer"}


def format_status(st: dict) -> str:
    lines = [f"run {st['run_id']}, tier {st['tier']}, {st['calls']} calls recorded"]
    for tool in TOOLS:
        cap = st["caps"][tool]
        cap_text = "uncapped" if cap is None else str(cap)
        lines.append(f"  {tool:7s} used {st['used'][tool]:4d} of {cap_text:>8s}")
    lines.append(f"  wall    {st['elapsed_s']:.0f} s of {st['wall_s']:.0f} s ({st['remaining']['wall_s']:.0f} s left)")
    lines.append(f"  best public reward so far: {st['best_reward']}")
    if st.get("call_running"):
        lines.append("  a call is running now")
    if st.get("interrupted_call") is not None:
        lines.append(f"  call {st['interrupted_call']} was interrupted (its process died); it is counted above")
    lines += [f"  warning: {line}" for line in st.get("bad_lines", [])]
    return "\n".join(lines)


def entry() -> None:
    """The `closer-tool` command: the broker's client inside a sandbox ($CLOSER_BROKER set),
    else the metering itself on a standalone workspace (closer.metered.cli, imported only then;
    a plain status whose files are unchanged since they were last read is answered from the
    status cache, closer.metered.quickstatus, and a plain tool call by the workspace's daemon or
    closer.metered.quickcall, without it)."""
    if broker_path():
        sys.exit(main(sys.argv[1:]))
    from closer.metered.quickstatus import cached_status_text, standalone_tool_call

    if (text := cached_status_text(sys.argv[1:])) is not None:
        print(text)
        sys.exit(0)
    if (code := standalone_tool_call(sys.argv[1:])) is not None:
        sys.exit(code)
    from closer.metered.cli import main as standalone_main

    standalone_main()


if __name__ == "__main__":
    entry()
