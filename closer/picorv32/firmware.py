"""Our PicoRV32 firmware: the manifest (`designs/picorv32/firmware/manifest.toml`) and its build
with Debian's `riscv64-unknown-elf-gcc` for rv32i / rv32im (ilp32), to a flat binary at address 0.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from closer.errors import InputError
from closer.picorv32.layout import PicoPaths, pico_paths
from closer.procs import Command, run

GCC = "riscv64-unknown-elf-gcc"
OBJCOPY = "riscv64-unknown-elf-objcopy"
CFLAGS = ["-mabi=ilp32", "-O2", "-ffreestanding", "-nostdlib", "-Wall", "-Werror"]


class Program(BaseModel):
    sources: list[str] = Field(description="Files in firmware/, assembled/compiled in this order")
    expect: int = Field(description="Value the program must write to IO_RESULT")
    max_cycles: int = Field(gt=0, description="Cycle limit for one run")
    configs: list[str] = Field(description="Design configurations the program runs on")


class Manifest(BaseModel):
    programs: dict[str, Program]


@dataclass(frozen=True)
class FirmwareImage:
    name: str
    elf: Path
    image: Path  # flat binary loaded at address 0
    expect: int
    max_cycles: int

    def as_job_entry(self) -> dict:
        return {"name": self.name, "image": str(self.image), "expect": self.expect,
                "max_cycles": self.max_cycles}


def load_manifest(paths: PicoPaths | None = None) -> Manifest:
    path = (paths or pico_paths()).manifest
    try:
        return Manifest.model_validate(tomllib.loads(path.read_text()))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(f"{path}: key {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc


def config_march(config: str, paths: PicoPaths | None = None) -> str:
    """The `-march` of a design configuration (design.toml `[configs.NAME].march`)."""
    path = (paths or pico_paths()).design_toml
    configs = tomllib.loads(path.read_text()).get("configs", {})
    if config not in configs:
        raise InputError(f"{path}: no [configs.{config}]; known: {', '.join(configs)}")
    march = configs[config].get("march")
    if not march:
        raise InputError(f"{path}: key configs.{config}.march is missing")
    return march


def config_parameters(config: str, paths: PicoPaths | None = None) -> dict[str, int]:
    path = (paths or pico_paths()).design_toml
    configs = tomllib.loads(path.read_text()).get("configs", {})
    if config not in configs:
        raise InputError(f"{path}: no [configs.{config}]; known: {', '.join(configs)}")
    return dict(configs[config].get("parameters", {}))


def build_program(name: str, march: str, out_dir: Path, manifest: Manifest | None = None,
                  paths: PicoPaths | None = None) -> FirmwareImage:
    paths = paths or pico_paths()
    manifest = manifest or load_manifest(paths)
    if name not in manifest.programs:
        raise InputError(f"{paths.manifest}: no program {name!r}; known: {', '.join(manifest.programs)}")
    program = manifest.programs[name]
    out_dir.mkdir(parents=True, exist_ok=True)
    elf = out_dir / f"{name}.elf"
    image = out_dir / f"{name}.bin"
    sources = [str(paths.firmware / s) for s in program.sources]
    compile_ = Command([GCC, f"-march={march}", *CFLAGS, f"-I{paths.firmware}",
                        f"-T{paths.firmware / 'link.ld'}", "-o", str(elf), *sources, "-lgcc"])
    run(compile_, out_dir / f"{name}.build.log")
    run(Command([OBJCOPY, "-O", "binary", str(elf), str(image)]), out_dir / f"{name}.objcopy.log")
    return FirmwareImage(name, elf, image, program.expect, program.max_cycles)


def build_programs(names: list[str], march: str, out_dir: Path) -> list[FirmwareImage]:
    manifest = load_manifest()
    return [build_program(n, march, out_dir, manifest) for n in names]


def programs_for(config: str) -> list[str]:
    return [n for n, p in load_manifest().programs.items() if config in p.configs]
