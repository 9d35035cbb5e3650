"""The Bedrock reranker through the real boto3 client: the exact request it sends, what it
makes of recorded answers, and that every failure is RerankerUnavailable without any text.

Most answers come through botocore's Stubber. Stubber checks a canned answer against the
service model, so an answer missing a required member (or with a score that is not a
number) cannot be canned: those go one layer down, as raw HTTP bodies through botocore's
real parser, the way a broken answer would arrive.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.compat import HTTPHeaders
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError
from botocore.stub import Stubber

from chatmemory.adapters.bedrock_reranker import (
    AMAZON_RERANK_V1,
    COHERE_RERANK_V3_5,
    DEFAULT_MODEL_ID,
    MAX_TEXT_CHARS,
    BedrockReranker,
    model_arn,
)
from chatmemory.domain.errors import InvalidField
from chatmemory.ports.reranker import Reranked, RerankerUnavailable

REGION = "eu-central-1"  # documented for both rerank models (eu-west-1 is not)
ARN = "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0"
QUERY = "Can you suggest a vegan dinner for me and my cat?"
MEMORIES = ["Lives in Pune.", "Is vegan.", "Has a cat named Miso."]
SENT_ON_THE_WIRE = "before-send.bedrock-agent-runtime.Rerank"


@pytest.fixture
def bedrock(aws_env: None) -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("bedrock-agent-runtime", region_name=REGION)
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def wire(aws_env: None) -> Any:
    """A real client whose HTTP answers the tests give (one attempt: no retries)."""
    return boto3.client(
        "bedrock-agent-runtime",
        region_name=REGION,
        config=Config(retries={"total_max_attempts": 1}),
    )


def rerank_request(query: str, texts: list[str], number_of_results: int) -> dict[str, Any]:
    """The request Rerank documents, with every document inline as TEXT."""
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
        "sources": [
            {
                "type": "INLINE",
                "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t}},
            }
            for t in texts
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": number_of_results,
                "modelConfiguration": {"modelArn": ARN},
            },
        },
    }


def rerank_answer(*scores: tuple[int, float]) -> dict[str, Any]:
    """A Rerank answer as the API reference shows it: `results`, each an index and a score."""
    return {"results": [{"index": index, "relevanceScore": score} for index, score in scores]}


class _Body:
    def __init__(self, raw: bytes) -> None:
        self._raw = raw

    def stream(self, **_: object) -> Iterator[bytes]:
        yield self._raw


def json_headers() -> HTTPHeaders:
    headers = HTTPHeaders()
    headers["Content-Type"] = "application/json"
    return headers


def answer_on_the_wire(client: Any, raw: bytes, status: int = 200) -> None:
    """Every Rerank call on `client` gets this HTTP answer, parsed by botocore itself."""

    def send(request: AWSPreparedRequest, **_: object) -> AWSResponse:
        return AWSResponse(request.url, status, json_headers(), _Body(raw))

    client.meta.events.register(SENT_ON_THE_WIRE, send)


def assert_no_text_in(message: str) -> None:
    for text in [QUERY, *MEMORIES]:
        assert text not in message
    assert "vegan" not in message.lower() and "Miso" not in message


# ---- the request, and the answer read back ---------------------------------------------


def test_one_call_sends_the_query_and_memories_inline_and_returns_the_best_first(
    bedrock: tuple[Any, Stubber],
) -> None:
    # Given Bedrock that finds "Is vegan." most relevant, then the cat (a recorded answer,
    # the document echoed back as the reference shows)
    client, stubber = bedrock
    answer = rerank_answer((1, 0.91), (2, 0.47))
    answer["results"][0]["document"] = {"type": "TEXT", "textDocument": {"text": MEMORIES[1]}}
    stubber.add_response("rerank", answer, rerank_request(QUERY, MEMORIES, 2))

    # When the top two are asked for
    ranked = BedrockReranker(client, model_arn=ARN).rerank(QUERY, MEMORIES, top_n=2)

    # Then one request (the stubber checks it) carried the query, all three memories and
    # the model's ARN, and the two best came back best first
    assert ranked == [Reranked(index=1, relevance=0.91), Reranked(index=2, relevance=0.47)]


def test_an_answer_out_of_order_still_comes_back_best_first(
    bedrock: tuple[Any, Stubber],
) -> None:
    client, stubber = bedrock
    stubber.add_response(
        "rerank", rerank_answer((0, 0.02), (2, 0.47), (1, 0.91)), rerank_request(QUERY, MEMORIES, 3)
    )

    ranked = BedrockReranker(client, model_arn=ARN).rerank(QUERY, MEMORIES, top_n=3)

    assert [r.index for r in ranked] == [1, 2, 0]


def test_asking_for_more_than_there_are_asks_for_all_of_them(
    bedrock: tuple[Any, Stubber],
) -> None:
    # Given two memories
    client, stubber = bedrock
    stubber.add_response(
        "rerank", rerank_answer((1, 0.9), (0, 0.1)), rerank_request(QUERY, MEMORIES[:2], 2)
    )

    # When ten are asked for
    ranked = BedrockReranker(client, model_arn=ARN).rerank(QUERY, MEMORIES[:2], top_n=10)

    # Then Bedrock was asked for two (numberOfResults never exceeds the sources) and both came
    assert [r.index for r in ranked] == [1, 0]


@pytest.mark.parametrize(("documents", "top_n"), [([], 5), (MEMORIES, 0)])
def test_nothing_to_rerank_makes_no_call(
    bedrock: tuple[Any, Stubber], documents: list[str], top_n: int
) -> None:
    # Given a stubbed client with no answer queued (any call would fail the test)
    client, _ = bedrock

    assert BedrockReranker(client, model_arn=ARN).rerank(QUERY, documents, top_n=top_n) == []


def test_overlong_text_is_cut_to_what_rerank_accepts(bedrock: tuple[Any, Stubber]) -> None:
    # Given a pasted wall of text as the message, and a memory just as long
    client, stubber = bedrock
    long_query, long_memory = "é" * (MAX_TEXT_CHARS + 8_000), "m" * (MAX_TEXT_CHARS + 1)
    stubber.add_response(
        "rerank",
        rerank_answer((1, 0.8), (0, 0.3)),
        rerank_request(long_query[:32_000], ["Is vegan.", long_memory[:32_000]], 2),
    )

    # When it is reranked, then each text went out at the API's 32,000-character limit
    ranked = BedrockReranker(client, model_arn=ARN).rerank(
        long_query, ["Is vegan.", long_memory], top_n=2
    )

    assert [r.index for r in ranked] == [1, 0]


def test_blank_memories_are_not_sent_and_follow_the_judged_ones(
    bedrock: tuple[Any, Stubber],
) -> None:
    # Given a blank memory among three (Rerank refuses empty text)
    client, stubber = bedrock
    stubber.add_response(
        "rerank",
        rerank_answer((1, 0.9), (0, 0.2)),
        rerank_request(QUERY, ["Is vegan.", "Has a cat."], 2),
    )

    ranked = BedrockReranker(client, model_arn=ARN).rerank(
        QUERY, ["Is vegan.", "  ", "Has a cat."], top_n=3
    )

    # Then the two sent are mapped back to their places and the blank one comes last
    assert ranked == [Reranked(2, 0.9), Reranked(0, 0.2), Reranked(1, 0.0)]


def test_memories_past_the_cap_are_not_sent_and_keep_the_order_given(
    bedrock: tuple[Any, Stubber],
) -> None:
    # Given a reranker capped at two documents and four candidates, best (by recall) first
    client, stubber = bedrock
    candidates = ["Is vegan.", "Has a cat named Miso.", "Lives in Pune.", "Plays chess."]
    stubber.add_response(
        "rerank", rerank_answer((1, 0.7), (0, 0.6)), rerank_request(QUERY, candidates[:2], 2)
    )

    ranked = BedrockReranker(client, model_arn=ARN, max_documents=2).rerank(
        QUERY, candidates, top_n=3
    )

    # Then only the first two were judged; the third follows, unjudged
    assert ranked == [Reranked(1, 0.7), Reranked(0, 0.6), Reranked(2, 0.0)]


def test_a_blank_query_is_refused_without_a_call(bedrock: tuple[Any, Stubber]) -> None:
    client, _ = bedrock

    with pytest.raises(RerankerUnavailable, match="blank"):
        BedrockReranker(client, model_arn=ARN).rerank("   ", MEMORIES, top_n=2)


# ---- failures of the service -------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ThrottlingException", 429),
        ("AccessDeniedException", 403),
        ("ValidationException", 400),
        ("ResourceNotFoundException", 404),
        ("ServiceQuotaExceededException", 400),
        ("InternalServerException", 500),
        ("DependencyFailedException", 424),
    ],
)
def test_a_service_error_is_unavailable_naming_the_code_and_no_text(
    bedrock: tuple[Any, Stubber], caplog: pytest.LogCaptureFixture, code: str, status: int
) -> None:
    # Given Bedrock refusing, with a message that quotes the request back
    client, stubber = bedrock
    stubber.add_client_error(
        "rerank",
        code,
        service_message=f"Rejected query {QUERY!r} with source {MEMORIES[1]!r}",
        http_status_code=status,
    )

    with caplog.at_level(logging.DEBUG, "chatmemory"), pytest.raises(RerankerUnavailable) as raised:
        BedrockReranker(client, model_arn=ARN).rerank(QUERY, MEMORIES, top_n=2)

    # Then the error and the log name the code and status, and quote nothing
    message = str(raised.value)
    assert code in message and f"HTTP {status}" in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert_no_text_in(message)
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("chatmemory.")]
    assert ours and all(code in line for line in ours)
    assert_no_text_in(" ".join(ours))


def test_a_timeout_is_unavailable(wire: Any) -> None:
    def time_out(request: AWSPreparedRequest, **_: object) -> None:
        raise ReadTimeoutError(endpoint_url=request.url)

    wire.meta.events.register(SENT_ON_THE_WIRE, time_out)

    with pytest.raises(RerankerUnavailable, match="ReadTimeoutError"):
        BedrockReranker(wire, model_arn=ARN).rerank(QUERY, MEMORIES, top_n=2)


# ---- answers that are not what Rerank documents -------------------------------------------


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (rerank_answer((1, 0.9), (3, 0.5)), "out of range"),
        (rerank_answer((1, 0.9), (1, 0.5)), "twice"),
        (rerank_answer((1, 0.9)), "1 results for 2 asked"),
        (rerank_answer((1, 0.9), (0, 1.7)), "0..1"),
        ({"results": []}, "0 results for 2 asked"),
    ],
)
def test_an_answer_that_breaks_the_documented_shape_is_unavailable(
    bedrock: tuple[Any, Stubber], answer: dict[str, Any], why: str
) -> None:
    client, stubber = bedrock
    stubber.add_response("rerank", answer)

    with pytest.raises(RerankerUnavailable, match=re.escape(why)) as raised:
        BedrockReranker(client, model_arn=ARN).rerank(QUERY, MEMORIES, top_n=2)

    assert_no_text_in(str(raised.value))


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b'{"results": [{"index": 1, "relevanceScore": 0.9}, {"index": 2}]}', "0..1"),
        (b'{"results": [{"index": 1, "relevanceScore": "high"}]}', "ValueError"),
        (b'{"results": [{"relevanceScore": 0.9}, {"index": 2, "relevanceScore": 0.4}]}', "range"),
        (b"<html>Bad gateway</html>", "no list of results"),
        (b"", "no list of results"),
    ],
)
def test_a_broken_answer_on_the_wire_is_unavailable(wire: Any, raw: bytes, why: str) -> None:
    # Given HTTP 200 with a body botocore parses into something Rerank never documents
    answer_on_the_wire(wire, raw)

    with pytest.raises(RerankerUnavailable, match=re.escape(why)) as raised:
        BedrockReranker(wire, model_arn=ARN).rerank(QUERY, MEMORIES, top_n=2)

    assert_no_text_in(str(raised.value))


def test_the_request_on_the_wire_is_the_documented_json(wire: Any) -> None:
    # Given the HTTP request as it leaves botocore
    seen: list[AWSPreparedRequest] = []

    def record(request: AWSPreparedRequest, **_: object) -> AWSResponse:
        seen.append(request)
        body = json.dumps(rerank_answer((1, 0.9))).encode()
        return AWSResponse(request.url, 200, json_headers(), _Body(body))

    wire.meta.events.register(SENT_ON_THE_WIRE, record)

    BedrockReranker(wire, model_arn=ARN).rerank(QUERY, MEMORIES, top_n=1)

    # Then it is POST /rerank on the region's agent-runtime endpoint, with the documented body
    (request,) = seen
    assert request.method == "POST"
    assert request.url == f"https://bedrock-agent-runtime.{REGION}.amazonaws.com/rerank"
    assert isinstance(request.body, bytes)
    assert json.loads(request.body) == rerank_request(QUERY, MEMORIES, 1)


# ---- construction and the model's ARN -----------------------------------------------------


def test_the_model_arn_is_a_foundation_model_arn_rerank_accepts() -> None:
    pattern = (
        botocore.session.get_session()
        .get_service_model("bedrock-agent-runtime")
        .shape_for("BedrockModelArn")
        .metadata["pattern"]
    )

    for model_id in (AMAZON_RERANK_V1, COHERE_RERANK_V3_5):
        arn = model_arn("eu-central-1", model_id)
        assert arn == f"arn:aws:bedrock:eu-central-1::foundation-model/{model_id}"
        assert re.fullmatch(pattern, arn)
    assert (
        model_arn("us-west-2") == "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
    )
    assert DEFAULT_MODEL_ID == AMAZON_RERANK_V1


def test_the_name_says_which_model(bedrock: tuple[Any, Stubber]) -> None:
    client, _ = bedrock
    cohere = model_arn(REGION, COHERE_RERANK_V3_5)

    assert BedrockReranker(client, model_arn=cohere).name == "bedrock-cohere.rerank-v3-5:0"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"model_arn": ARN, "max_documents": 0}, "max_documents"),
        ({"model_arn": ARN, "max_documents": 1_001}, "max_documents"),
        ({"model_arn": AMAZON_RERANK_V1}, "model_arn"),
    ],
)
def test_a_reranker_rerank_cannot_serve_is_refused(
    bedrock: tuple[Any, Stubber], arguments: dict[str, Any], field: str
) -> None:
    client, _ = bedrock

    with pytest.raises(InvalidField) as raised:
        BedrockReranker(client, **arguments)

    assert raised.value.field == field
