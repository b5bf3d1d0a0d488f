"""Known answers: the specification repository's vectors and the committed reference set."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from hashing import hemera
from hashing.hemera import SUITES, Backend
from hashing.hemera.vectors import case_input
from tests.conftest import FIXTURES

VECTORS = FIXTURES / "hemera" / "vectors.json"

# From vectors/hemera.json of cyberia-to/hemera at e63b85a ("hash" section).
SPEC_VECTORS = {
    b"": "a67a71b221e6bdd6442a20432bf5d74c885d89e5dfbeec3ec4e334cb806d563c",
    b"hello": "e1b19b8235443e9fac8f1d6a1203de66e9a58c53e36cbbc1f71a031c3d13ce77",
    b"hemera": "94341ea38ac105378d9e8ce04ac889fdbcb952c7877d9ab9225ecc022b66c82a",
}


def load_vectors() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(VECTORS.read_text(encoding="utf-8"))
    return doc


@pytest.mark.parametrize("data", list(SPEC_VECTORS), ids=repr)
def test_specification_vectors(impl: Backend, data: bytes) -> None:
    assert impl.hash(data).hex() == SPEC_VECTORS[data]


def test_vector_file_is_for_this_suite() -> None:
    doc = load_vectors()
    # Written by the e63b85a crate under the label of the time; both names are this suite.
    assert doc["suite"] in SUITES
    assert doc["columns"] == ["length", "pattern", "hemera"]
    lengths = {n for n, _, _ in doc["cases"]}
    # The file must keep covering every rate/padding boundary and large inputs.
    assert set(range(0, 201)) <= lengths
    assert {55, 56, 57, 111, 112, 113, 4095, 4096, 4097, 100_000, 102_400} <= lengths
    assert len(doc["cases"]) >= 500


# The pure-Python twin takes seconds over the reference set's long inputs: the default run
# gives it those under 1100 bytes (334 of 584 cases, every boundary around the rate), the
# slow suite the rest.
LONG = 1100


def _wrong(impl: Backend, keep: Callable[[int], bool]) -> list[tuple[int, int, str]]:
    """The reference cases (index, length, pattern) whose length ``keep`` accepts and which
    ``impl`` hashes to anything but the reference digest."""
    wrong = []
    for index, (length, pattern, want) in enumerate(load_vectors()["cases"]):
        if not keep(length):
            continue
        data = case_input(index, length, pattern)
        assert len(data) == length
        if impl.hash(data).hex() != want:
            wrong.append((index, length, pattern))
    return wrong


def test_reference_vectors(impl: Backend, backend_name: str) -> None:
    twin = backend_name == "python"
    assert _wrong(impl, lambda n: not twin or n < LONG) == []


@pytest.mark.slow
def test_reference_vectors_long_inputs_in_the_twin() -> None:
    assert _wrong(hemera.python_impl, lambda n: n >= LONG) == []


def test_case_input_patterns() -> None:
    assert case_input(3, 4, "zero") == b"\0\0\0\0"
    assert case_input(3, 2, "ff") == b"\xff\xff"
    assert case_input(3, 258, "counter")[255:] == b"\xff\x00\x01"
    assert case_input(1, 64, "seeded") != case_input(2, 64, "seeded")
    assert case_input(1, 64, "seeded")[:10] == case_input(1, 10, "seeded")
    with pytest.raises(ValueError):
        case_input(0, 1, "nope")
