"""A Rule2DRC problem folder: its spec, gold script and labeled layouts.

    problems/<id>/spec.yaml             id, title, nl_description, layers, rules, categories, deck, data_dir
    problems/<id>/gold/<id>.drc         the ground-truth script (also accepted: <root>/gold/<id>.drc)
    problems/<id>/data/gds/labels.csv   filename, one 0/1 column per category
    problems/<id>/data/gds/pass/*.gds   layouts with no violation
    problems/<id>/data/gds/fail/*.gds   layouts with at least one

Only the public view (`PublicProblem`: no gold, no layouts, no labels) is ever shown to an agent,
a test generator or a judge.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path, PurePosixPath

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from closer.errors import InputError
from closer.inputs import read_text, validation_message

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
MAX_LAYOUT_BYTES = 32 * 2**20
MAX_SPEC_BYTES = 1 * 2**20


class RuleText(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str = Field(max_length=4000)
    category: str = Field(max_length=200)


class PublicProblem(BaseModel):
    """What an agent sees: the rule, the layers, the categories to write."""
    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=ID_PATTERN)
    title: str = Field(max_length=400)
    nl_description: str = Field(default="", max_length=20000)
    layers: dict[str, tuple[int, int]] = Field(default_factory=dict)
    rules: list[RuleText] = Field(default_factory=list)
    categories: list[str] = Field(min_length=1, max_length=64)


class ProblemSpec(PublicProblem):
    deck: str = ""
    data_dir: str = "data/gds"

    @field_validator("data_dir")
    @classmethod
    def _relative(cls, value: str) -> str:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError("must be a relative path inside the problem folder")
        return value

    def public(self) -> PublicProblem:
        return PublicProblem.model_validate(self.model_dump(include=set(PublicProblem.model_fields)))


class LabeledLayout(BaseModel):
    file: Path
    labels: dict[str, int]  # category -> 0/1

    @property
    def violates(self) -> bool:
        return any(self.labels.values())


class ProblemPaths:
    def __init__(self, folder: Path, root: Path | None = None):
        self.folder = folder
        self.root = root if root is not None else folder.parent.parent

    @property
    def spec(self) -> Path:
        return self.folder / "spec.yaml"

    def gold(self, problem_id: str) -> Path:
        inside = self.folder / "gold" / f"{problem_id}.drc"
        return inside if inside.is_file() or not (self.root / "gold" / f"{problem_id}.drc").is_file() \
            else self.root / "gold" / f"{problem_id}.drc"

    def data(self, spec: ProblemSpec) -> Path:
        return self.folder / spec.data_dir

    def labels(self, spec: ProblemSpec) -> Path:
        return self.data(spec) / "labels.csv"


class Problem(BaseModel):
    spec: ProblemSpec
    folder: Path
    gold: Path
    layouts: list[LabeledLayout]


def load_problem(folder: Path, root: Path | None = None) -> Problem:
    paths = ProblemPaths(folder, root)
    spec = read_spec(paths.spec)
    layouts = read_labels(paths.labels(spec), paths.data(spec), spec.categories)
    return Problem(spec=spec, folder=folder, gold=paths.gold(spec.id), layouts=layouts)


def read_spec(path: Path) -> ProblemSpec:
    text = read_text(path, "spec.yaml", MAX_SPEC_BYTES)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping")
    try:
        return ProblemSpec.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{path}: {validation_message(exc)}") from None


def read_labels(path: Path, data_dir: Path, categories: list[str]) -> list[LabeledLayout]:
    rows = list(csv.reader(io.StringIO(read_text(path, "labels.csv"))))
    if not rows or rows[0][:1] != ["filename"]:
        raise InputError(f"{path}: header: first column must be 'filename'")
    header = rows[0][1:]
    missing = [c for c in categories if c not in header]
    if missing:
        raise InputError(f"{path}: header: no column for category {missing[0]!r}")
    layouts = []
    for number, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(rows[0]):
            raise InputError(f"{path}: line {number}: {len(row)} fields, header has {len(rows[0])}")
        labels = {}
        for name, value in zip(header, row[1:]):
            if value.strip() not in ("0", "1"):
                raise InputError(f"{path}: line {number}: {name}: {value!r} is not 0 or 1")
            labels[name] = int(value)
        layouts.append(LabeledLayout(file=_layout_file(path, number, data_dir, row[0]), labels=labels))
    if not layouts:
        raise InputError(f"{path}: no layouts")
    return layouts


def _layout_file(path: Path, number: int, data_dir: Path, name: str) -> Path:
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts or not name.endswith(".gds"):
        raise InputError(f"{path}: line {number}: filename: {name!r} must be a relative .gds path")
    for candidate in (data_dir / name, data_dir / "pass" / name, data_dir / "fail" / name):
        if candidate.is_file() and not candidate.is_symlink():
            if candidate.stat().st_size > MAX_LAYOUT_BYTES:
                raise InputError(f"{path}: line {number}: {name}: larger than {MAX_LAYOUT_BYTES} bytes")
            return candidate
    raise InputError(f"{path}: line {number}: filename: {name!r} not found under {data_dir}")


def write_labels(path: Path, categories: list[str], rows: list[tuple[str, dict[str, int]]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["filename", *categories])
    for name, labels in rows:
        writer.writerow([name, *(labels[c] for c in categories)])
    path.write_text(buffer.getvalue())


def write_spec(path: Path, spec: ProblemSpec) -> None:
    path.write_text(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False, allow_unicode=True))


def find_problems(root: Path) -> list[Path]:
    """Problem folders under a Rule2DRC root (`root/problems/*/spec.yaml`) or a single folder."""
    if (root / "spec.yaml").is_file():
        return [root]
    folders = sorted(p.parent for p in (root / "problems").glob("*/spec.yaml"))
    if not folders:
        raise InputError(f"{root}: no problems/<id>/spec.yaml")
    return folders
