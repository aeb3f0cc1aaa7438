"""closer.lightjson against the json package: the same values parsed, the same refusals, the same
text written (generated documents and perturbed ones)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from closer import lightjson

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                         max_leaves=20)
PROPERTY = settings(max_examples=150, deadline=None)


def _same(a: object, b: object) -> bool:
    return json.dumps(a) == json.dumps(b)  # NaN is not equal to itself; its text is


@PROPERTY
@given(value=documents, indent=st.sampled_from([None, 2, 4]))
def test_dumps_writes_what_json_dumps_writes(value: object, indent: int | None):
    assert lightjson.dumps(value, indent) == json.dumps(value, indent=indent)


@PROPERTY
@given(value=documents, indent=st.sampled_from([None, 2]), pad=st.sampled_from(["", " ", "\n\t "]))
def test_loads_reads_what_json_loads_reads(value: object, indent: int | None, pad: str):
    text = pad + json.dumps(value, indent=indent) + pad
    assert _same(lightjson.loads(text), json.loads(text))
    assert _same(lightjson.loads(text.encode()), json.loads(text.encode()))


@PROPERTY
@given(value=documents, cut=st.integers(0, 200), junk=st.text(max_size=3))
def test_loads_refuses_what_json_loads_refuses(value: object, cut: int, junk: str):
    good = json.dumps(value)
    for text in (good[:cut], good[:cut] + junk + good[cut:], good + junk):
        try:
            expected = json.loads(text)
        except ValueError:
            with pytest.raises(ValueError):
                lightjson.loads(text)
            continue
        assert _same(lightjson.loads(text), expected)


@pytest.mark.parametrize("text", ["", " ", "{} {}", "[1,]", '{"a" 1}', "nan", "\ufeff{}", '"\x01"'])
def test_loads_refuses_malformed_documents(text: str):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        lightjson.loads(text)


def test_dumps_refuses_what_json_cannot_write():
    with pytest.raises(TypeError):
        lightjson.dumps({1: "int key"})
    with pytest.raises(TypeError):
        lightjson.dumps({"a": object()})
