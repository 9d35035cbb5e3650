"""The stack's vector size and encoding: parameters every function reads, each value one the
code accepts."""

from __future__ import annotations

import pytest

from chatmemory.adapters.titan_embedder import TitanEmbedder
from chatmemory.config import Settings
from chatmemory.domain.vector_encoding import VectorEncoding
from tests.support.template import load_template


def test_every_function_reads_the_vector_size_and_encoding_from_the_stack() -> None:
    template = load_template()
    variables = template["Globals"]["Function"]["Environment"]["Variables"]

    assert variables["CHATMEMORY_TITAN_DIMENSIONS"] == {"Ref": "VectorDimensions"}
    assert variables["CHATMEMORY_VECTOR_ENCODING"] == {"Ref": "VectorEncoding"}


def test_the_defaults_are_512_dimensions_at_fp16_as_the_settings_default() -> None:
    parameters = load_template()["Parameters"]

    assert parameters["VectorDimensions"]["Default"] == "512"
    assert parameters["VectorEncoding"]["Default"] == "fp16"
    assert Settings().titan_dimensions == 512 and Settings().vector_encoding == "fp16"


def test_the_allowed_sizes_are_titans_and_the_allowed_encodings_the_indexs() -> None:
    parameters = load_template()["Parameters"]

    for size in parameters["VectorDimensions"]["AllowedValues"]:
        assert TitanEmbedder(object(), dimensions=int(size)).dimensions == int(size)
    assert parameters["VectorEncoding"]["AllowedValues"] == [e.value for e in VectorEncoding]


@pytest.mark.parametrize("size", ["256", "1024"])
def test_a_chosen_size_reaches_the_settings(monkeypatch: pytest.MonkeyPatch, size: str) -> None:
    monkeypatch.setenv("CHATMEMORY_TITAN_DIMENSIONS", size)
    monkeypatch.setenv("CHATMEMORY_VECTOR_ENCODING", "byte")

    settings = Settings.from_env()

    assert settings.titan_dimensions == int(size)
    assert settings.vector_encoding == "byte"
