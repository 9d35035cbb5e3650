"""Every embedder gives unit vectors of its size; the real models also know meaning."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.minilm_embedder import MiniLMEmbedder, minilm_available
from chatmemory.adapters.titan_embedder import TitanEmbedder
from chatmemory.domain.errors import InvalidField
from chatmemory.ports.embedder import Embedder

needs_minilm = pytest.mark.skipif(not minilm_available(), reason="the local model is not installed")


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    if not minilm_available():
        pytest.skip("the local model is not installed")
    return MiniLMEmbedder()


@pytest.fixture(params=["hashing", "minilm"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    if request.param == "hashing":
        return HashingEmbedder()
    result: Embedder = request.getfixturevalue("minilm")
    return result


def test_vectors_are_unit_length_and_the_declared_size(embedder: Embedder) -> None:
    vectors = embedder.embed(["Is vegetarian.", "Ist Vegetarier 🥦", "x"])

    assert vectors.shape == (3, embedder.dimensions) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_embedding_is_deterministic_and_batch_independent(embedder: Embedder) -> None:
    alone = embedder.embed(["Has a dog named Bruno."])[0]
    in_batch = embedder.embed(["Lives in Pune.", "Has a dog named Bruno."])[1]

    assert float(alone @ in_batch) > 0.999


def test_nothing_in_nothing_out(embedder: Embedder) -> None:
    assert embedder.embed([]).shape == (0, embedder.dimensions)


@needs_minilm
def test_the_local_model_knows_meaning_not_just_spelling(minilm: MiniLMEmbedder) -> None:
    # No shared words, yet the same meaning is nearer than an unrelated question.
    veg, no_meat, peru = minilm.embed(
        ["Is vegetarian.", "I do not eat meat", "What is the capital of Peru?"]
    )

    assert float(veg @ no_meat) > float(veg @ peru) + 0.2


# ---- Titan, through the real boto3 client with recorded responses ----------------------


@pytest.fixture
def bedrock(aws_env: None) -> Iterator[tuple[object, Stubber]]:
    client = boto3.client("bedrock-runtime", region_name="eu-west-1")
    with Stubber(client) as stubber:
        yield client, stubber


def _titan_response(vector: list[float]) -> dict[str, object]:
    raw = json.dumps({"embedding": vector, "inputTextTokenCount": 4}).encode()
    return {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"}


def test_titan_sends_one_normalised_request_per_text(bedrock: tuple[object, Stubber]) -> None:
    client, stubber = bedrock
    for text, vector in (
        ("Is vegetarian.", [3.0, 4.0] + [0.0] * 254),
        ("Lives in Pune.", [0.0] * 255 + [2.0]),
    ):
        stubber.add_response(
            "invoke_model",
            _titan_response(vector),
            {
                "modelId": "amazon.titan-embed-text-v2:0",
                "body": json.dumps({"inputText": text, "dimensions": 256, "normalize": True}),
                "contentType": "application/json",
                "accept": "application/json",
            },
        )
    titan = TitanEmbedder(client, dimensions=256)

    vectors = titan.embed(["Is vegetarian.", "Lives in Pune."])

    stubber.assert_no_pending_responses()
    assert titan.name == "titan-v2-256" and vectors.shape == (2, 256)
    assert np.allclose(vectors[0][:2], [0.6, 0.8]) and np.allclose(
        np.linalg.norm(vectors, axis=1), 1.0
    )


def test_titan_refuses_sizes_it_cannot_produce(bedrock: tuple[object, Stubber]) -> None:
    client, _ = bedrock
    with pytest.raises(InvalidField):
        TitanEmbedder(client, dimensions=384)


def test_a_titan_error_surfaces_to_the_caller(bedrock: tuple[object, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_client_error("invoke_model", "ThrottlingException", http_status_code=429)

    with pytest.raises(Exception, match="Throttling"):
        TitanEmbedder(client, dimensions=256).embed(["Is vegetarian."])
