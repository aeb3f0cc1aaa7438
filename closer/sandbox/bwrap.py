"""A `SandboxSpec` as a command line: prlimit (the limits) → bubblewrap, started by root (the
namespaces and the mounts: root reads every bind source, wherever the trial folder lies) →
setpriv inside (the trial's uid, no groups, no capabilities, no new privileges) → the command.
The sandboxed program is an ordinary unprivileged host uid in its own pid, mount, network, IPC
and UTS namespaces.

Commands are data: `sandbox_argv` returns the argv that `closer.procs.run` starts, so the wall
clock and the kill of the whole process group stay in the one place that runs processes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from closer.errors import SandboxSetupError, ToolMissing
from closer.sandbox.spec import SandboxSpec

# The system a sandboxed program needs to start (read-only). /etc has no secret a non-root uid
# can read; /proc is the sandbox's own (its pid namespace), /dev a minimal one, /tmp private.
SYSTEM_MOUNTS = [
    "--ro-bind", "/usr", "/usr",
    "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64",
    "--symlink", "usr/bin", "/bin",
    "--symlink", "usr/sbin", "/sbin",
    "--ro-bind", "/etc", "/etc",
    "--proc", "/proc",
    "--dev", "/dev",
    "--tmpfs", "/tmp",
    "--tmpfs", "/run",
]
NAMESPACES = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
              "--die-with-parent", "--new-session"]


def require_programs() -> dict[str, str]:
    """Paths of the programs a sandbox needs; a missing one is a set-up error, not a skip."""
    found = {}
    for name in ("bwrap", "setpriv", "prlimit"):
        path = shutil.which(name)
        if path is None:
            raise ToolMissing(f"{name}: not found on PATH (scripts/bootstrap.sh installs bubblewrap; "
                              "setpriv and prlimit come with util-linux)")
        found[name] = path
    return found


def require_sources(sources) -> None:
    """Every host path a sandbox mounts exists: bubblewrap's own failure (exit 1, "Can't find
    source path") is indistinguishable from the sandboxed program's exit 1."""
    missing = [str(path) for path in sources if not Path(path).exists()]
    if missing:
        raise SandboxSetupError(f"sandbox mount source(s) not found: {', '.join(missing)}")


def sandbox_argv(spec: SandboxSpec, command: list[str]) -> list[str]:
    programs = require_programs()
    require_sources(bind.source for bind in spec.binds)
    limits = spec.limits
    argv = [programs["prlimit"], f"--as={limits.memory_bytes}", f"--nproc={limits.processes}",
            f"--fsize={limits.file_bytes}", f"--nofile={limits.open_files}", "--",
            programs["bwrap"], *NAMESPACES, "--clearenv"]
    for key, value in sorted(spec.env.items()):
        argv += ["--setenv", key, value]
    argv += SYSTEM_MOUNTS
    for folder in parent_dirs(spec):
        argv += ["--perms", "0755", "--dir", str(folder)]
    for bind in spec.binds:
        argv += ["--bind" if bind.writable else "--ro-bind", str(bind.source), str(bind.target)]
    for path in spec.hidden_files:
        argv += ["--ro-bind", "/dev/null", str(path)]
    for path in spec.hidden_dirs:
        argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
    argv += ["--chdir", str(spec.chdir), "--", *drop_privileges(spec.uid, spec.gid), *command]
    return argv


def parent_dirs(spec: SandboxSpec) -> list[Path]:
    """The folders above the bind targets, made world-traversable (bwrap run by root makes them
    0700, which would lock the sandbox's uid out of its own mounts)."""
    targets = [bind.target for bind in spec.binds]
    system = {Path(p) for p in ("/", "/usr", "/etc", "/proc", "/dev", "/tmp", "/run")}
    parents = set()
    for target in targets:
        for parent in target.parents:
            inside_bind = any(parent == t or t in parent.parents for t in targets)
            if parent not in system and not inside_bind and not any(parent.is_relative_to(p) for p in
                                                                     ("/usr", "/etc", "/proc", "/dev")):
                parents.add(parent)
    return sorted(parents, key=lambda p: len(p.parts))


def drop_privileges(uid: int, gid: int) -> list[str]:
    """setpriv at /usr/bin inside the sandbox (the host's, read-only)."""
    return ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]


def mount_points(spec: SandboxSpec) -> list[Path]:
    """Where the spec's host paths appear inside (for messages and tests)."""
    return [bind.target for bind in spec.binds]
