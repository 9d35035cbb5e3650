"""The reranker on AWS: Amazon Bedrock's Rerank operation (bedrock-agent-runtime).

One Rerank call per use, with the documents sent inline as TEXT sources. The answer is
checked before it is believed (each index in range and once, each score a number in 0..1),
and every failure, of the service or of the answer, becomes RerankerUnavailable naming the
kind of failure only. Nothing here logs or raises the query or a document: they are the
user's message and memories.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any, TypeGuard

from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

from chatmemory.domain.errors import InvalidField
from chatmemory.ports.reranker import Reranked, Reranker, RerankerUnavailable

log = logging.getLogger(__name__)

AMAZON_RERANK_V1 = "amazon.rerank-v1:0"
COHERE_RERANK_V3_5 = "cohere.rerank-v3-5:0"
#: Amazon's own model: no AWS Marketplace subscription to manage, unlike Cohere's
DEFAULT_MODEL_ID = AMAZON_RERANK_V1

#: where AWS documents each model for single-region use (rerank-supported.html, as read in
#: 2026-12); not enforced, since AWS adds regions: a region outside it is a config mistake
#: to warn about. Note neither model is documented in eu-west-1.
DOCUMENTED_REGIONS: Mapping[str, frozenset[str]] = {
    AMAZON_RERANK_V1: frozenset({"ap-northeast-1", "ca-central-1", "eu-central-1", "us-west-2"}),
    COHERE_RERANK_V3_5: frozenset(
        {"ap-northeast-1", "ca-central-1", "eu-central-1", "us-east-1", "us-west-2"}
    ),
}

# The Rerank API's own limits (botocore's service model, bedrock-agent-runtime 2023-07-26):
MAX_DOCUMENTS = 1_000  # sources: 1..1000 per call; numberOfResults: 1..1000
MAX_TEXT_CHARS = 32_000  # RerankTextDocument.text, for the query and each document: 1..32000


#: what else a call may raise: the network, timeouts, credentials and parameter checks
#: (BotoCoreError); an answer botocore cannot parse (ResponseParserError, or ValueError for
#: a number that is not one)
_CALL_FAILURES = (BotoCoreError, ResponseParserError, ValueError)


def model_arn(region: str, model_id: str = DEFAULT_MODEL_ID) -> str:
    """The foundation-model ARN Rerank takes (foundation models have no account id)."""
    return f"arn:aws:bedrock:{region}::foundation-model/{model_id}"


class BedrockReranker(Reranker):
    """Reranks through `client.rerank`, one call per use.

    `client` is a boto3 `bedrock-agent-runtime` client, injected so tests can stub it; give
    it short timeouts and few retries, since recall waits for it. Documents past
    `max_documents`, and blank ones (the API refuses empty text), are not sent: they follow
    the judged ones in the order given, with relevance 0.0, so top_n still means top_n.
    """

    def __init__(self, client: Any, *, model_arn: str, max_documents: int = MAX_DOCUMENTS) -> None:
        if not 1 <= max_documents <= MAX_DOCUMENTS:
            raise InvalidField("max_documents", f"Rerank takes 1..{MAX_DOCUMENTS} documents")
        if not model_arn.startswith("arn:"):
            raise InvalidField("model_arn", "Rerank takes the model's ARN, not its id")
        self._client = client
        self._model_arn = model_arn
        self._max_documents = max_documents
        self.name = f"bedrock-{model_arn.rsplit('/', 1)[-1]}"

    def rerank(self, query: str, documents: Sequence[str], *, top_n: int) -> list[Reranked]:
        wanted = min(top_n, len(documents))
        if wanted < 1:
            return []
        if not query.strip():
            raise _unavailable("the query is blank")
        sent = [at for at, text in enumerate(documents[: self._max_documents]) if text.strip()]
        ranked: list[Reranked] = []
        if sent:
            asked = min(wanted, len(sent))
            answer = self._ask(query, [documents[at] for at in sent], asked)
            ranked = [Reranked(sent[at], score) for at, score in _read(answer, len(sent), asked)]
        judged = set(sent)
        rest = (at for at in range(len(documents)) if at not in judged)
        ranked.extend(Reranked(at, 0.0) for at in islice(rest, wanted - len(ranked)))
        return ranked

    def _ask(self, query: str, texts: list[str], asked: int) -> Any:
        try:
            return self._client.rerank(
                queries=[{"type": "TEXT", "textQuery": {"text": query[:MAX_TEXT_CHARS]}}],
                sources=[
                    {
                        "type": "INLINE",
                        "inlineDocumentSource": {
                            "type": "TEXT",
                            "textDocument": {"text": text[:MAX_TEXT_CHARS]},
                        },
                    }
                    for text in texts
                ],
                rerankingConfiguration={
                    "type": "BEDROCK_RERANKING_MODEL",
                    "bedrockRerankingConfiguration": {
                        "numberOfResults": asked,
                        "modelConfiguration": {"modelArn": self._model_arn},
                    },
                },
            )
        except ClientError as error:
            raise _unavailable(_client_error_kind(error)) from None
        except _CALL_FAILURES as error:
            # The class only: some messages quote the values sent or received.
            raise _unavailable(type(error).__name__) from None


def _read(answer: Any, sent: int, asked: int) -> list[tuple[int, float]]:
    """(position among the texts sent, score) for each result, best first; ties keep the
    order sent. Raises RerankerUnavailable if the answer is not what Rerank documents."""
    results = answer.get("results") if isinstance(answer, Mapping) else None
    if not isinstance(results, list):
        raise _unavailable("malformed answer (no list of results)")
    if len(results) != asked:
        raise _unavailable(f"malformed answer ({len(results)} results for {asked} asked)")
    scored: dict[int, float] = {}
    for result in results:
        at = result.get("index") if isinstance(result, Mapping) else None
        score = result.get("relevanceScore") if isinstance(result, Mapping) else None
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < sent:
            raise _unavailable("malformed answer (an index missing or out of range)")
        if at in scored:
            raise _unavailable("malformed answer (an index twice)")
        if not _is_relevance(score):
            raise _unavailable("malformed answer (a score that is not a number in 0..1)")
        scored[at] = float(score)
    return sorted(scored.items(), key=lambda item: (-item[1], item[0]))


def _is_relevance(score: object) -> TypeGuard[float]:
    return (
        isinstance(score, int | float)
        and not isinstance(score, bool)
        and math.isfinite(score)
        and 0.0 <= score <= 1.0
    )


def _client_error_kind(error: ClientError) -> str:
    """The error's code, HTTP status and request id: never its message, which may quote
    the request."""
    response: Mapping[str, Any] = error.response
    code = str(response.get("Error", {}).get("Code") or "ClientError")
    meta = response.get("ResponseMetadata", {})
    details = [f"HTTP {meta['HTTPStatusCode']}"] if meta.get("HTTPStatusCode") else []
    if meta.get("RequestId"):
        details.append(f"request {meta['RequestId']}")
    return f"{code} ({', '.join(details)})" if details else code


def _unavailable(kind: str) -> RerankerUnavailable:
    """RerankerUnavailable for a failure of `kind`, logged as a warning (the kind only)."""
    log.warning("bedrock reranker unavailable: %s", kind)
    return RerankerUnavailable(f"the reranker is unavailable: {kind}")
