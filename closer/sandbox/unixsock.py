"""The Unix-socket servers a sandbox reaches (the metering broker, the network proxy): one way to
listen on a socket its uid may connect to, and one accept loop that hands each connection to a
thread of its own."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path


def listen(path: Path, backlog: int = 32, mode: int = 0o666) -> socket.socket:
    """A listening socket at `path` (replacing a stale one); by default connectable by the
    sandbox's uid, which sees nothing else of the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(mode)
    server.listen(backlog)
    server.settimeout(0.2)  # the accept loop notices `running` being cleared
    return server


def accept_loop(server: socket.socket, running: threading.Event, serve: Callable[[socket.socket], None],
                started: Callable[[threading.Thread], None] = lambda thread: None) -> None:
    while running.is_set():
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        worker = threading.Thread(target=serve, args=(conn,), daemon=True)
        started(worker)
        worker.start()
