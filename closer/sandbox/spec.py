"""A sandbox as data: what it sees, who it runs as, what it may use.

The agent of a trial runs in one: an unprivileged uid of its own, its own user, pid, mount, IPC,
UTS and network namespaces, the workspace as the only writable host path, the interpreter and
Closer's client read-only, the EDA programs hidden, and limits on memory, processes and file size.
The wall clock is the runner's (`closer.procs.run` timeout); when the sandbox's first process
exits, the kernel ends every process of its pid namespace.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

SANDBOX_UID_BASE = 61000  # trial uids are SANDBOX_UID_BASE + a per-trial offset (no passwd entry)
SANDBOX_UID_SPAN = 4000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Bind(_Strict):
    source: Path
    target: Path
    writable: bool = False


class Limits(_Strict):
    memory_bytes: int = Field(8 << 30, gt=0, description="address-space limit of each process")
    processes: int = Field(512, gt=0, description="processes of the sandbox's uid at once")
    file_bytes: int = Field(1 << 30, gt=0, description="largest file a process may write")
    open_files: int = Field(4096, gt=0)


class Endpoint(_Strict):
    """host:port an agent may reach through the runner's proxy (e.g. its model's API)."""

    host: str = Field(min_length=1)
    port: int = Field(gt=0, lt=65536)

    @classmethod
    def parse(cls, text: str) -> "Endpoint":
        host, sep, port = text.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"{text!r}: an endpoint is host:port")
        return cls(host=host, port=int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class SandboxSpec(_Strict):
    uid: int = Field(ge=1000, description="host uid the sandbox runs as (never root)")
    gid: int = Field(ge=1000)
    binds: list[Bind] = Field(default_factory=list)
    hidden_files: list[Path] = Field(default_factory=list, description="replaced by an empty device")
    hidden_dirs: list[Path] = Field(default_factory=list, description="replaced by an empty tmpfs")
    chdir: Path = Path("/")
    env: dict[str, str] = Field(default_factory=dict, description="the whole environment inside")
    limits: Limits = Limits()
    network: list[Endpoint] = Field(default_factory=list, description="allowed through the proxy; none by default")

    @field_validator("env")
    @classmethod
    def _no_nul(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if "\0" in key or "\0" in item or "=" in key:
                raise ValueError(f"environment variable {key!r}: not a valid name or value")
        return value


def trial_uid(run_id: str, in_use=lambda uid: False) -> int:
    """A uid per trial, so limits and leftovers of one trial never mix with another's: derived
    from the run id, moved on past any uid that still has processes (`in_use`)."""
    start = int.from_bytes(run_id.encode(), "big") % SANDBOX_UID_SPAN
    for step in range(SANDBOX_UID_SPAN):
        uid = SANDBOX_UID_BASE + (start + step) % SANDBOX_UID_SPAN
        if not in_use(uid):
            return uid
    raise RuntimeError("every sandbox uid has processes running")
