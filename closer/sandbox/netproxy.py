"""Network for a sandbox: none, or exactly the endpoints its agent configuration names.

The sandbox has its own network namespace (loopback only). When endpoints are allowed, the runner
owns an HTTP CONNECT proxy on a Unix socket (`Proxy`, outside the sandbox) that opens a TCP
connection only to an allowed host:port and logs every request; inside, `closer.sandbox.inside`
listens on 127.0.0.1:PROXY_PORT and forwards each connection to that socket, and the agent gets
HTTPS_PROXY / HTTP_PROXY / ALL_PROXY pointing there. Anything else the agent tries has no route.
"""

from __future__ import annotations

import socket
import threading
from datetime import datetime, timezone
from pathlib import Path

from closer.sandbox import unixsock
from closer.sandbox.spec import Endpoint

PROXY_PORT = 3128
CONNECT_TIMEOUT_S = 20.0
MAX_HEADER_BYTES = 16 << 10


def proxy_env() -> dict[str, str]:
    url = f"http://127.0.0.1:{PROXY_PORT}"
    return {"HTTPS_PROXY": url, "HTTP_PROXY": url, "ALL_PROXY": url,
            "https_proxy": url, "http_proxy": url, "all_proxy": url, "NO_PROXY": "", "no_proxy": ""}


class Proxy:
    def __init__(self, allowed: list[Endpoint], socket_path: Path, log: Path):
        self.allowed = {(e.host.lower(), e.port) for e in allowed}
        self.socket_path = socket_path
        self.log = log
        self._server: socket.socket | None = None
        self._running = threading.Event()
        self._log_lock = threading.Lock()

    def start(self) -> "Proxy":
        self._server = unixsock.listen(self.socket_path)
        self._running.set()
        threading.Thread(target=unixsock.accept_loop, name="proxy-accept", daemon=True,
                         args=(self._server, self._running, self._serve)).start()
        return self

    def stop(self) -> None:
        self._running.clear()
        if self._server is not None:
            self._server.close()
        self.socket_path.unlink(missing_ok=True)

    def _serve(self, client: socket.socket) -> None:
        try:
            target = self._read_connect(client)
        except (OSError, ValueError) as exc:
            self._record("bad request", str(exc))
            _reply(client, 400, "Bad Request")
            client.close()
            return
        if target not in self.allowed:
            self._record("refused", f"{target[0]}:{target[1]}")
            _reply(client, 403, "Forbidden by the run's network allow-list")
            client.close()
            return
        try:
            upstream = socket.create_connection(target, timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            self._record("unreachable", f"{target[0]}:{target[1]} ({exc})")
            _reply(client, 502, "Bad Gateway")
            client.close()
            return
        self._record("opened", f"{target[0]}:{target[1]}")
        upstream.settimeout(None)
        _reply(client, 200, "Connection established")
        splice(client, upstream)

    def _read_connect(self, client: socket.socket) -> tuple[str, int]:
        client.settimeout(CONNECT_TIMEOUT_S)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = client.recv(4096)
            if not chunk:
                raise ValueError("connection closed before the request")
            data += chunk
            if len(data) > MAX_HEADER_BYTES:
                raise ValueError("request header too long")
        client.settimeout(None)
        method, _, rest = data.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
        if method.upper() != "CONNECT":
            raise ValueError(f"only CONNECT is proxied, not {method!r}")
        endpoint = Endpoint.parse(rest.split(" ", 1)[0])
        return endpoint.host.lower(), endpoint.port

    def _record(self, what: str, detail: str) -> None:
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self._log_lock, open(self.log, "a") as log:
            log.write(f"{stamp} {what} {detail}\n")


def _reply(client: socket.socket, code: int, text: str) -> None:
    try:
        client.sendall(f"HTTP/1.1 {code} {text}\r\n\r\n".encode())
    except OSError:
        pass


def splice(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until either side closes."""
    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
    other.join()
    a.close()
    b.close()


def start_proxy(allowed: list[Endpoint], socket_path: Path, log: Path) -> Proxy | None:
    """The runner's proxy for a sandbox, or None when the agent may reach nothing."""
    return Proxy(allowed, socket_path, log).start() if allowed else None
