"""What the flow's process sets up once for SiliconCompiler, so that its node processes (forked
from it) do not each pay for it.

- Path resolvers for local data only. SiliconCompiler's first lookup of a non-absolute path
  source (`python://siliconcompiler`, a dataroot) fills its resolver registry with every built-in
  scheme, importing the remote ones' modules on the way (`Resolver.populate_resolvers`: PyGithub,
  GitPython, cryptography; about 0.13 s of CPU per flow process on this machine). The flow's data
  is local by construction (design files are paths inside the design folder, the PDK is PDK_ROOT,
  the tools' scripts are installed packages), so the registry gets the local schemes and any
  installed resolver plugin; a remote source fails SiliconCompiler's lookup with its own
  "no resolver" error instead of being fetched.
- Modules every node imports on its own: jinja2, for the node's replay script (about 20 ms of CPU
  in each node process when the parent has not imported it).
"""

from __future__ import annotations

_NODE_MODULES = ("jinja2",)


def prepare_process() -> None:
    """Local resolvers, and the modules the nodes would each import, loaded here once."""
    import importlib

    from siliconcompiler.package import Resolver

    Resolver.populate_resolvers = staticmethod(_populate_local)
    for module in _NODE_MODULES:
        importlib.import_module(module)


def _populate_local() -> None:
    """Fill the registry with SiliconCompiler's local schemes (a no-op once filled)."""
    from siliconcompiler.package import (_RESOLVERS_POPULATED, DatarootResolver, FileResolver,
                                         KeyPathResolver, PythonPathResolver)
    from siliconcompiler.utils import get_plugins
    from siliconcompiler.utils.multiprocessing import MPManager

    settings = MPManager().get_transient_settings()
    with settings.lock_category("resolvers"):
        if settings.get("resolvers", _RESOLVERS_POPULATED, False):
            return
        local = {"": FileResolver, "file": FileResolver, "file+private": FileResolver,
                 "key": KeyPathResolver, "python": PythonPathResolver, "dataroot": DatarootResolver}
        for scheme, resolver in local.items():   # as SiliconCompiler's populate_resolvers names them
            settings.set("resolvers", scheme, resolver)
        for plugin in get_plugins("path_resolver"):
            for scheme, resolver in plugin().items():
                settings.set("resolvers", scheme, resolver)
        settings.set("resolvers", _RESOLVERS_POPULATED, True)
