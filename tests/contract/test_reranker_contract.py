"""The Reranker contract: what every reranker does, whichever model is behind it.

Bedrock runs through the real boto3 client against a stand-in for the service at the HTTP
layer: it reads the request botocore serialised, scores each source by the words it
shares with the query, and answers in Rerank's documented JSON, which botocore parses.
It refuses what Rerank refuses (empty text, more results than sources, more than 1,000
sources), so an adapter that sends a request the service would reject fails here too.

To add a reranker, add a builder to RERANKERS; the tests stay as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.compat import HTTPHeaders
from botocore.config import Config

from chatmemory.adapters.bedrock_reranker import BedrockReranker, model_arn
from chatmemory.ports.reranker import Reranker

QUERY = "Can you suggest a vegan dinner?"
MEMORIES = [
    "Has a cat named Miso.",
    "Lives in Pune.",
    "Is vegan and cooks dinner most nights.",
    "Plays chess on Sundays.",
    "Works as a nurse.",
]
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text)}


class _Body:
    def __init__(self, raw: bytes) -> None:
        self._raw = raw

    def stream(self, **_: object) -> Iterator[bytes]:
        yield self._raw


def _answer(status: int, payload: dict[str, Any], url: str) -> AWSResponse:
    headers = HTTPHeaders()
    headers["Content-Type"] = "application/json"
    if status != 200:
        headers["x-amzn-ErrorType"] = str(payload["__type"])
    return AWSResponse(url, status, headers, _Body(json.dumps(payload).encode()))


def _bedrock_rerank(request: AWSPreparedRequest, **_: object) -> AWSResponse:
    """Bedrock's Rerank, honestly faked: documented refusals, documented answer."""
    assert isinstance(request.body, bytes)
    body = json.loads(request.body)
    query = body["queries"][0]["textQuery"]["text"]
    texts = [source["inlineDocumentSource"]["textDocument"]["text"] for source in body["sources"]]
    wanted = body["rerankingConfiguration"]["bedrockRerankingConfiguration"]["numberOfResults"]
    # Stricter than the reference on one point: it does not say what numberOfResults above
    # the number of sources does, so a request relying on it is refused here.
    if not query or not all(texts) or not 1 <= len(texts) <= 1_000 or wanted > len(texts):
        refusal = {"__type": "ValidationException", "message": "refused by the stand-in"}
        return _answer(400, refusal, request.url)
    asked = _words(query)
    scores = [len(asked & _words(text)) / max(len(_words(text)), 1) for text in texts]
    best = sorted(range(len(texts)), key=lambda at: -scores[at])[:wanted]
    results = [{"index": at, "relevanceScore": scores[at]} for at in best]
    return _answer(200, {"results": results}, request.url)


def _bedrock() -> Reranker:
    client = boto3.client(
        "bedrock-agent-runtime",
        region_name="eu-central-1",
        config=Config(retries={"total_max_attempts": 1}),
    )
    client.meta.events.register("before-send.bedrock-agent-runtime.Rerank", _bedrock_rerank)
    return BedrockReranker(client, model_arn=model_arn("eu-central-1"))


#: every reranker the contract holds for, by name
RERANKERS: dict[str, Callable[[], Reranker]] = {"bedrock": _bedrock}


@pytest.fixture(params=sorted(RERANKERS))
def reranker(request: pytest.FixtureRequest, aws_env: None) -> Reranker:
    return RERANKERS[request.param]()


def test_the_most_relevant_memory_comes_first(reranker: Reranker) -> None:
    ranked = reranker.rerank(QUERY, MEMORIES, top_n=3)

    assert ranked[0].index == 2


def test_results_are_best_first_with_relevance_in_0_to_1(reranker: Reranker) -> None:
    ranked = reranker.rerank(QUERY, MEMORIES, top_n=len(MEMORIES))

    relevance = [r.relevance for r in ranked]
    assert relevance == sorted(relevance, reverse=True)
    assert all(0.0 <= r <= 1.0 for r in relevance)


def test_each_memory_comes_back_at_most_once_by_its_position(reranker: Reranker) -> None:
    ranked = reranker.rerank(QUERY, MEMORIES, top_n=len(MEMORIES))

    assert sorted(r.index for r in ranked) == list(range(len(MEMORIES)))


@pytest.mark.parametrize(("top_n", "expected"), [(1, 1), (3, 3), (5, 5), (50, 5)])
def test_top_n_is_how_many_come_back_capped_at_how_many_were_given(
    reranker: Reranker, top_n: int, expected: int
) -> None:
    assert len(reranker.rerank(QUERY, MEMORIES, top_n=top_n)) == expected


def test_the_same_memory_twice_keeps_the_order_given(reranker: Reranker) -> None:
    # Given the same text at two places (equal relevance, whatever the model)
    memories = ["Is vegan.", "Lives in Pune.", "Is vegan."]

    ranked = reranker.rerank(QUERY, memories, top_n=3)

    # Then the earlier one comes first
    twins = [r.index for r in ranked if r.index in (0, 2)]
    assert twins == [0, 2]


def test_nothing_in_nothing_out(reranker: Reranker) -> None:
    assert reranker.rerank(QUERY, [], top_n=5) == []


def test_the_reranker_has_a_name(reranker: Reranker) -> None:
    assert reranker.name
