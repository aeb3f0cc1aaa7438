"""SHA-256 from the C class itself, for the metered call's start-up path: hashlib's Python layer
and OpenSSL's _hashlib behind it cost about 3 ms to import here, more than hashing a call's
files (run.json, tools.toml and a small edit surface) takes with the built-in class."""

from __future__ import annotations

try:
    from _sha256 import sha256  # Python 3.11
except ImportError:  # pragma: no cover - 3.12 and later
    from hashlib import sha256

__all__ = ["sha256"]
