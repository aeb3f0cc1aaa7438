"""A `yosys` command over the pyosys wheel (Yosys 0.70 as a library, no CLI of its own).

SiliconCompiler's Yosys tasks run `yosys -c script.tcl` and check `yosys --version`. The wheel has
no Tcl inside, so `-c` runs the script in Python's Tcl (tkinter) with the commands Yosys's own Tcl
mode provides: `yosys CMD...` (returning the `result.string` scratchpad, as `tee -s result.string`
sets it) and `rtlil::{has_attr,get_attr,set_attr} -mod`. Any Yosys error ends the process with
exit code 1 (libyosys exits on `log_error`); a Tcl error exits 1 with its message.

Supported: `-c FILE`, `-s FILE`, `-p CMDS`, `-q` (drops the log; errors still reach stderr), `-V`/`--version`, `-h`, and positional
input files (read with Yosys's automatic frontend selection) as in the real command.
"""

from __future__ import annotations

import argparse
import os
import sys


def _yosys():
    from pyosys import libyosys

    if not libyosys.yosys_already_setup():
        libyosys.yosys_setup()
    return libyosys


def version_line() -> str:
    # `yosys_maybe_version()` is e.g. "Yosys 0.70 (git sha1 28ba3cb92, Release, ...)", the format
    # SiliconCompiler parses (second word).
    return _yosys().yosys_maybe_version()


class YosysSession:
    """Runs passes on the global design (the one `tee -s` and the scratchpad act on)."""

    def __init__(self) -> None:
        self.ys = _yosys()
        self.design = self.ys.yosys_get_design()

    def run(self, command: str) -> str:
        self.design.scratchpad_unset("result.string")
        self.ys.run_pass(command, self.design)
        sys.stdout.flush()
        return self.design.scratchpad_get_string("result.string")

    def script(self, path: str) -> None:
        self.run(f"script {_quote(path)}")

    def module(self, name: str):
        ident = name if name.startswith(("\\", "$")) else "\\" + name
        module = self.design.module(self.ys.IdString(ident))
        if module is None:
            raise ValueError(f"no module {name}")
        return module

    def run_tcl(self, path: str, tcl_args: list[str]) -> None:
        import tkinter

        interp = self.interp = tkinter.Tcl()
        interp.createcommand("yosys", self._tcl_yosys)
        interp.eval("namespace eval rtlil {}")
        interp.createcommand("rtlil::has_attr", self._tcl_has_attr)
        interp.createcommand("rtlil::get_attr", self._tcl_get_attr)
        interp.createcommand("rtlil::set_attr", self._tcl_set_attr)
        interp.setvar("argv0", path)
        interp.call("set", "argv", interp.call("list", *tcl_args))
        interp.setvar("argc", str(len(tcl_args)))
        try:
            interp.eval(f"source {{{path}}}")
        finally:
            interp.eval("flush stdout")
            sys.stdout.flush()

    def _tcl_yosys(self, *args: str) -> str:
        self.interp.eval("flush stdout")  # keep Tcl's `puts` in order with the Yosys log
        if args and args[0] == "-import":
            return ""  # commands are already reachable through `yosys CMD`
        return self.run(" ".join(_quote(a) for a in args))

    @staticmethod
    def _attr_args(args: tuple[str, ...]) -> tuple[set[str], list[str]]:
        flags = {a for a in args if a.startswith("-")}
        rest = [a for a in args if not a.startswith("-")]
        if "-mod" not in flags:
            raise ValueError("this launcher supports rtlil attribute commands on modules (-mod) only")
        return flags, rest

    def _tcl_has_attr(self, *args: str) -> str:
        _, (mod, attr) = self._attr_args(args)
        return "1" if self.module(mod).has_attribute(self.ys.IdString("\\" + attr)) else "0"

    def _tcl_get_attr(self, *args: str) -> str:
        flags, (mod, attr) = self._attr_args(args)
        module = self.module(mod)
        ident = self.ys.IdString("\\" + attr)
        if not module.has_attribute(ident):
            raise ValueError(f"module {mod} has no attribute {attr}")
        if "-string" in flags:
            return module.get_string_attribute(ident)
        const = module.attributes[ident]
        return str(const.as_int("-sint" in flags))

    def _tcl_set_attr(self, *args: str) -> str:
        flags, (mod, attr, value) = self._attr_args(args)
        module = self.module(mod)
        ident = self.ys.IdString("\\" + attr)
        if "-string" in flags:
            module.set_string_attribute(ident, value)
        else:
            width = 32
            module.attributes[ident] = self.ys.Const(int(value), width)
        return ""


def _quote(arg: str) -> str:
    if arg and not any(c in arg for c in " \t\n\"';"):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="yosys", add_help=False,
                                description="Yosys (pyosys) launcher for Closer")
    p.add_argument("-c", dest="tcl_script")
    p.add_argument("-s", dest="scripts", action="append", default=[])
    p.add_argument("-p", dest="commands", action="append", default=[])
    p.add_argument("-q", dest="quiet", action="store_true")
    p.add_argument("-V", "--version", dest="version", action="store_true")
    p.add_argument("-h", "--help", dest="help", action="store_true")
    p.add_argument("inputs", nargs="*")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point. Ends the process with os._exit: libyosys can crash in its static
    destructors at interpreter shutdown, which would turn a success into a segfault."""
    code = _main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _main(argv: list[str] | None) -> int:
    args, tcl_args = _parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.help:
        _parser().print_help()
        return 0
    if args.version:
        print(version_line())
        return 0
    if args.tcl_script:  # as in Yosys, arguments after the Tcl script are its $argv
        tcl_args, args.inputs = [*args.inputs, *tcl_args], []
    if tcl_args and not args.tcl_script:
        print(f"ERROR: unsupported option(s): {' '.join(tcl_args)}", file=sys.stderr)
        return 1
    session = YosysSession()
    if args.quiet:
        _silence_stdout()  # Yosys errors go to stderr and still show
    try:
        for path in args.inputs:
            session.run(_read_command(path))
        for path in args.scripts:
            session.script(path)
        for commands in args.commands:
            session.run(commands)
        if args.tcl_script:
            session.run_tcl(args.tcl_script, tcl_args)
    except Exception as exc:  # Tcl errors and attribute errors: Yosys errors already exited
        sys.stdout.flush()
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    return 0


def _read_command(path: str) -> str:
    if path.endswith((".ys", ".tcl")):
        return f"script {_quote(path)}"
    if path.endswith(".il"):
        return f"read_rtlil {_quote(path)}"
    return f"read {_quote(path)}"


def _silence_stdout() -> None:
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
