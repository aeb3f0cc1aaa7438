"""Job descriptions for the firdma oracle: directed edge cases and seeded random jobs.

Pure Python (no cocotb), so the generator can be unit-tested and shared by the public seeds and the
hidden set. A `Conditions` object says how random jobs are drawn; seeds make them reproducible.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from firdma_model import INT16_MAX, INT16_MIN

PROFILES = ("none", "light", "heavy", "bursty")
SRC_BASE, DST_BASE, REGION = 0x0001_0000, 0x0008_0000, 0x0002_0000  # jobs live in these windows
MEM_SIZE = 0x0010_0000


@dataclass
class Conditions:
    jobs_per_seed: int = 6
    len_min: int = 1
    len_max: int = 96
    bursts: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 8, 16])
    profiles: list[str] = field(default_factory=lambda: list(PROFILES))
    shift_max: int = 20
    saturating_prob: float = 0.2
    abort_prob: float = 0.15
    read_error_prob: float = 0.1
    write_error_prob: float = 0.1
    near_4k_prob: float = 0.4
    decerr_prob: float = 0.0     # share of error jobs answering DECERR instead of SLVERR
    exokay_prob: float = 0.0     # share of jobs whose successful responses are EXOKAY
    long_len: int = 4099         # LEN of test_spec's long job
    max_len: int = 0             # LEN of test_max_len's job (65535: the largest LEN); 0: no job
    lite_profiles: list[str] = field(default_factory=lambda: ["stall", "heavy"])  # test_spec's AXI-Lite stalls

    @classmethod
    def from_dict(cls, data: dict) -> "Conditions":
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown condition keys: {sorted(unknown)}")
        return cls(**data)


@dataclass
class Job:
    name: str
    src: int
    dst: int
    samples: list[int]
    coefs: list[int]
    shift: int
    burst: int
    profile: str = "none"
    irq_en: bool = True
    abort_after: int | None = None          # cycles after START to write ABORT
    abort_in_write: bool = False            # write ABORT as soon as the first write burst starts
    read_error: tuple[int, int] | None = None   # [start, end) byte range answering SLVERR
    write_error: tuple[int, int] | None = None
    busy_writes: bool = False               # write config registers and START while busy
    error_resp: int = 2                     # the error range answers SLVERR (2) or DECERR (3)
    ok_resp: int = 0                        # successful responses: OKAY (0) or EXOKAY (1)
    start_ctrl: int = 1                     # the CTRL value that starts the job (3: START and ABORT)
    abort_ctrl: int = 2                     # the CTRL value that aborts it (3: START and ABORT)
    must_abort: bool = False                # the abort surely comes before the end: ABORTED, never DONE
    abort_pending_writes: int = 0           # abort once this many write bursts await their response
    abort_delay: int = 0                    # ... and this many cycles more (the write queue fills meanwhile)

    @property
    def length(self) -> int:
        return len(self.samples)


def _rand_samples(rng: random.Random, n: int, extreme: bool) -> list[int]:
    if extreme:
        return [rng.choice([INT16_MIN, INT16_MAX, INT16_MIN + 1, INT16_MAX - 1, rng.randint(INT16_MIN, INT16_MAX)])
                for _ in range(n)]
    return [rng.randint(INT16_MIN, INT16_MAX) for _ in range(n)]


def _rand_coefs(rng: random.Random, ntaps: int, saturating: bool) -> list[int]:
    if saturating:
        return [rng.choice([INT16_MIN, INT16_MAX]) for _ in range(ntaps)]
    return [rng.randint(-2048, 2047) if rng.random() < 0.7 else rng.randint(INT16_MIN, INT16_MAX)
            for _ in range(ntaps)]


def _place(rng: random.Random, base: int, nbytes: int, beat: int, near_4k: bool) -> int:
    """A beat-aligned address inside a job window, sometimes just below a 4 KB boundary."""
    if near_4k:
        page = base + rng.randrange(1, REGION // 0x1000 - 2) * 0x1000
        return page - beat * rng.randint(1, 24)
    return base + beat * rng.randrange(0, (REGION - nbytes - 0x1000) // beat)


def random_jobs(seed: int, cond: Conditions, ntaps: int, data_w: int) -> list[Job]:
    rng = random.Random(seed)
    beat = data_w // 8
    jobs = []
    for i in range(cond.jobs_per_seed):
        n = rng.randint(cond.len_min, cond.len_max)
        saturating = rng.random() < cond.saturating_prob
        job = Job(
            name=f"seed{seed}_job{i}",
            src=_place(rng, SRC_BASE, 2 * n, beat, rng.random() < cond.near_4k_prob),
            dst=_place(rng, DST_BASE, 2 * n, beat, rng.random() < cond.near_4k_prob),
            samples=_rand_samples(rng, n, saturating),
            coefs=_rand_coefs(rng, ntaps, saturating),
            shift=rng.randint(0, cond.shift_max) if not saturating else rng.randint(0, 3),
            burst=rng.choice(cond.bursts),
            profile=rng.choice(cond.profiles),
            irq_en=rng.random() < 0.7,
        )
        roll = rng.random()
        nbytes = 2 * n
        if roll < cond.abort_prob:
            job.abort_after = rng.randint(1, max(2, n * (ntaps + 4)))
        elif roll < cond.abort_prob + cond.read_error_prob:
            at = job.src + (rng.randrange(0, nbytes) // beat) * beat
            job.read_error = (at, at + beat)
        elif roll < cond.abort_prob + cond.read_error_prob + cond.write_error_prob:
            at = job.dst + (rng.randrange(0, nbytes) // beat) * beat
            job.write_error = (at, at + beat)
        codes = random.Random(seed * 7919 + i)  # its own stream: the draws above stay as they were
        job.error_resp = 3 if codes.random() < cond.decerr_prob else 2
        job.ok_resp = 1 if codes.random() < cond.exokay_prob else 0
        jobs.append(job)
    return jobs


def directed_jobs(ntaps: int, data_w: int) -> list[Job]:
    """The fixed edge cases every implementation must pass (the CI smoke set)."""
    rng = random.Random(20261130)
    beat = data_w // 8
    coefs = _rand_coefs(rng, ntaps, False)

    def job(name: str, n: int, **kw) -> Job:
        fields = dict(src=SRC_BASE + 0x100, dst=DST_BASE + 0x100, samples=_rand_samples(rng, n, False),
                      coefs=coefs, shift=5, burst=4)
        fields.update(kw)
        return Job(name=name, **fields)

    sat_coefs = [INT16_MAX if k % 2 == 0 else INT16_MIN for k in range(ntaps)]
    # The largest sum there is: NTAPS products -32768 x -32768 (NTAPS * 2^30), then the most negative
    # (-32768 x 32767); at SHIFT 31 and 16 the result is in range only if the accumulator holds it.
    extreme = [INT16_MIN] * (2 * ntaps + 3) + [INT16_MAX] * (2 * ntaps + 3) + [INT16_MIN] * (ntaps + 2)
    page = SRC_BASE + 0x3000
    return [
        job("odd_len_rounding", 37, shift=7),
        job("history_cleared", 11, shift=3),           # same coefs: stale history would show
        job("saturation", 24, samples=_rand_samples(rng, 24, True), coefs=sat_coefs, shift=0),
        job("saturation_shift", 24, samples=_rand_samples(rng, 24, True), coefs=sat_coefs, shift=2),
        job("negative_shift31", 9, shift=31),
        job("accumulator_max_shift31", len(extreme), samples=extreme, coefs=[INT16_MIN] * ntaps, shift=31),
        job("accumulator_max_shift16", len(extreme), samples=extreme, coefs=[INT16_MIN] * ntaps, shift=16),
        job("crossing_4k", 70, src=page - 5 * beat, dst=DST_BASE + 0x5000 - 3 * beat, burst=16,
            profile="light"),
        job("len_1", 1, burst=16),
        job("len_0", 0),
        job("burst_1_backpressure", 13, burst=1, profile="heavy", irq_en=False),
        job("misaligned_src", 8, src=SRC_BASE + 0x102),
        job("misaligned_dst", 8, dst=DST_BASE + 0x102),
        job("read_error", 40, read_error=(SRC_BASE + 0x100 + 4 * beat, SRC_BASE + 0x100 + 5 * beat),
            burst=2, profile="bursty"),
        job("write_error", 40, write_error=(DST_BASE + 0x100 + 2 * beat, DST_BASE + 0x100 + 3 * beat),
            burst=2),
        job("write_error_irq_off", 20, write_error=(DST_BASE + 0x100, DST_BASE + 0x100 + beat),
            burst=2, irq_en=False),    # ERROR with IRQ_EN 0: irq stays low
        job("abort", 60, abort_after=12 * (ntaps + 3), burst=3, profile="light"),
        job("abort_early", 30, abort_after=3, burst=8),
        job("abort_in_write_burst", 80, abort_in_write=True, burst=16, profile="heavy"),
        job("busy_writes", 30, busy_writes=True, burst=8, profile="bursty"),
    ]


def max_len_job(seed: int, length: int, ntaps: int, data_w: int) -> Job:
    """One job of `length` samples (the largest LEN, 65535, in the hidden set): the source starts
    a few beats below a 4 KB boundary and the destination likewise, so both sides cross every page
    boundary of a 128 KB window with bursts split there."""
    rng = random.Random(seed * 7919 + length)
    if not 1 <= length <= 0xFFFF:
        raise ValueError(f"max_len must be 1..65535, not {length}")
    beat = data_w // 8
    return Job(name=f"max_len_{length}", src=SRC_BASE + 0x1000 - 3 * beat, dst=DST_BASE + 0x1000 - 7 * beat,
               samples=_rand_samples(rng, length, False), coefs=_rand_coefs(rng, ntaps, False),
               shift=rng.randint(6, 14), burst=16)
