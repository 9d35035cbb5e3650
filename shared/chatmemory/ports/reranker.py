"""The reranker: a cross-encoder that reorders recall's few candidates by relevance."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass


class RerankerUnavailable(RuntimeError):
    """The reranker could not answer; the caller keeps its own order.

    The message names the kind of failure only: never the query or a document, which are
    the user's message and memories.
    """


@dataclass(frozen=True, slots=True)
class Reranked:
    """One document the reranker judged."""

    #: position in the documents given
    index: int
    #: how relevant the document is to the query, 0..1, higher is better
    relevance: float


class Reranker(ABC):
    """Judges each (query, document) pair together, which a bi-encoder cannot.

    Optional and off by default: recall works without it, and falls back to its own
    order whenever it raises.
    """

    #: stable name, used to pick per-reranker thresholds ("bedrock-amazon.rerank-v1:0", …)
    name: str

    @abstractmethod
    def rerank(self, query: str, documents: Sequence[str], *, top_n: int) -> list[Reranked]:
        """The top_n documents by relevance to query, best first (each index once).

        - No documents, or a top_n below 1: [] without asking the model.
        - top_n is capped at len(documents): asking for more returns them all.
        - Equal relevance keeps the order the documents were given in.
        - Raises RerankerUnavailable on any failure of the service (throttling, access
          denied, timeouts, a malformed answer) or on a query it cannot judge (blank), so
          the caller can fall back to its own order: never a partial answer.
        """
