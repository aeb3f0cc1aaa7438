"""The metering broker: serves the `closer-tool` calls of a sandboxed agent from outside its sandbox.

The runner owns it. It listens on a Unix socket that is the only thing of the run directory the
sandbox sees; each connection carries one request (newline-delimited JSON)::

    {"op": "call", "tool": "sim", "args": []}    ->  accepted, progress lines, then one result line
    {"op": "status"}                              ->  accepted, one result line

and the broker runs `metered_call` on the run's workspace, whose control dir (ledger, trajectory,
snapshots, budget) lives outside the workspace. Calls are serialized by the run's lock, and the cap
check and the charge happen under it, so concurrent calls never overspend. A client that
disconnects (or is killed) does not stop its call: the call runs to its end, is recorded and
charged, and its results are delivered.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
import traceback
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from closer.budget import ToolClass
from closer.errors import CloserError
from closer.metered.front import Deliver, Isolate, metered_call
from closer.metered.ledger import status
from closer.metered.paths import WorkspacePaths
from closer.sandbox import unixsock

PROGRESS_EVERY_S = 15.0
MAX_REQUEST_BYTES = 1 << 16
EXIT_USAGE = 2
EXIT_INFRA = 13


class CallRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: str = Field(pattern="^(call|status)$")
    tool: ToolClass | None = None
    args: list[str] = Field(default_factory=list, max_length=256)


class Broker:
    def __init__(self, ws: WorkspacePaths, socket_path: Path, deliver: Deliver | None = None,
                 log: Path | None = None, isolate: Isolate | None = None, shared_flow_cache: bool = True,
                 socket_mode: int = 0o666):
        self.ws = ws
        self.shared_flow_cache = shared_flow_cache  # closer.metered.front.metered_call
        self.socket_path = socket_path
        self.deliver = deliver
        self.isolate = isolate
        self.log = log or socket_path.with_suffix(".log")
        self.socket_mode = socket_mode  # 0o666: the sandbox's uid connects; a standalone daemon's is 0o600
        self._busy = 0
        self._last_active = time.monotonic()
        self._server: socket.socket | None = None
        self._accepting = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self) -> "Broker":
        self._server = unixsock.listen(self.socket_path, backlog=16, mode=self.socket_mode)
        self._accepting.set()
        accept = threading.Thread(target=unixsock.accept_loop, name="broker-accept", daemon=True,
                                  args=(self._server, self._accepting, self._serve, self._track))
        accept.start()
        self._threads.append(accept)
        return self

    def idle_for(self) -> float:
        """Seconds since the last request ended; 0 while one is being served."""
        with self._lock:
            return 0.0 if self._busy else time.monotonic() - self._last_active

    def stop(self, wait_s: float | None = None, unlink: bool = True) -> int:
        """Stop accepting and wait for the calls still running (they are bounded by the run's wall
        clock). Returns how many calls were still running when the wait ended. `unlink=False`
        leaves the socket's path alone (another broker has it now)."""
        self._accepting.clear()
        deadline = None if wait_s is None else time.monotonic() + wait_s
        for thread in list(self._threads):
            thread.join(None if deadline is None else max(deadline - time.monotonic(), 0))
        if self._server is not None:
            self._server.close()
        if unlink:
            self.socket_path.unlink(missing_ok=True)
        return sum(t.is_alive() for t in self._threads)

    def _track(self, worker: threading.Thread) -> None:
        with self._lock:
            self._threads.append(worker)

    def _serve(self, conn: socket.socket) -> None:
        with self._lock:
            self._busy += 1
        try:
            self._serve_connection(conn)
        finally:
            with self._lock:
                self._busy -= 1
                self._last_active = time.monotonic()

    def _serve_connection(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            try:
                request = _read_request(conn)
            except (ValueError, ValidationError, OSError) as exc:
                _send(conn, {"type": "result", "exit_code": EXIT_USAGE,
                             "output": f"closer-tool: bad request to the metering broker: {_first_line(exc)}"})
                return
            conn.settimeout(None)
            _send(conn, {"type": "accepted"}, quiet=True)
            _send(conn, self._answer(request, conn))

    def _answer(self, request: CallRequest, conn: socket.socket) -> dict:
        try:
            if request.op == "status":
                return {"type": "result", "exit_code": 0, "status": dataclasses.asdict(status(self.ws))}
            if request.tool is None:
                raise CloserError("a call request names its tool")
            result = self._call_with_progress(request.tool, request.args, conn)
            return {"type": "result", "exit_code": result.exit_code, "output": result.feedback}
        except CloserError as exc:
            return {"type": "result", "exit_code": EXIT_USAGE, "output": f"closer-tool: error: {exc}"}
        except Exception:  # the harness failed, not the agent: logged, reported as infrastructure
            with open(self.log, "a") as log:
                log.write(traceback.format_exc())
            return {"type": "result", "exit_code": EXIT_INFRA,
                    "output": f"closer-tool: the metering broker failed (logged in {self.log.name})"}

    def _call_with_progress(self, tool: ToolClass, args: list[str], conn: socket.socket):
        box: dict = {}

        def work() -> None:
            try:
                box["result"] = metered_call(self.ws, tool, args, deliver=self.deliver, isolate=self.isolate,
                                             shared_flow_cache=self.shared_flow_cache)
            except BaseException as exc:  # handed back to the serving thread
                box["error"] = exc

        worker = threading.Thread(target=work, name=f"metered-{tool.value}", daemon=True)
        start = time.monotonic()
        worker.start()
        while worker.is_alive():
            worker.join(PROGRESS_EVERY_S)
            if worker.is_alive():
                _send(conn, {"type": "progress", "elapsed_s": round(time.monotonic() - start, 1)},
                      quiet=True)
        if "error" in box:
            raise box["error"]
        return box["result"]


def _read_request(conn: socket.socket) -> CallRequest:
    data = b""
    while b"\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError(f"request over {MAX_REQUEST_BYTES} bytes")
    line = data.split(b"\n", 1)[0]
    return CallRequest.model_validate_json(line)


def _send(conn: socket.socket, message: dict, quiet: bool = False) -> None:
    """A client that went away does not stop the call; its answer is simply not read."""
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        if not quiet:
            return


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
