"""Recall under the OpenSearch index's vector encodings: float32, fp16 (faiss SQfp16), byte.

Run:  .venv/bin/python bench/vector_encoding.py                    (MiniLM 384-d, ~1 minute)
      .venv/bin/python bench/vector_encoding.py --embedder titan --region us-west-2 \
          --dimensions 512                          (where an AWS account with Bedrock exists)

Both labelled sets are seeded once through the real write path (the rows' own 8-bit words
and 4-bit uses, as stored); then every question is asked once per encoding through the
real `Retriever`, its index an exact index that scores what the collection would hold:
`as_stored` rows against `query_as_sent` queries (domain/vector_encoding.py, the code the
OpenSearch adapter quantises with) — fp16 halves of the normalised rows against a float32
query, or byte rows against a byte query with the cosine read back from their inner
product. HNSW's approximation is not simulated. Recall@5 and injection are read at the
calibrated `RelevanceParams` of the embedder, on the dev and test splits of both sets,
with how far each candidate's cosine moved from float32 and how many questions were sent
something else.

What this cannot tell: the dimension's effect. MiniLM has one size; Titan's 256/512/1,024
need Bedrock — run the second command once per `--dimensions` and compare the float32 rows.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

import people  # noqa: E402 - bench/ is on sys.path
from calibrate import Question, quality  # noqa: E402
from recall_breakdown import Bars  # noqa: E402
from retrieval import Labelled, prepare, seed  # noqa: E402

from chatmemory.adapters.clock import SystemClock  # noqa: E402
from chatmemory.adapters.exact_index import ExactIndex, _UserMatrix  # noqa: E402
from chatmemory.config import Container, Settings, use_container  # noqa: E402
from chatmemory.domain.vector_encoding import (  # noqa: E402
    BYTE_RANGE,
    VectorEncoding,
    as_stored,
    normalised,
    query_as_sent,
)
from chatmemory.ports.embedder import Embedder, Vectors  # noqa: E402
from chatmemory.ports.recall_source import MemoryDigest, RecallSource  # noqa: E402
from chatmemory.ports.vector_index import VectorHit  # noqa: E402
from chatmemory.services.relevance import RelevanceModel  # noqa: E402
from chatmemory.services.retrieval import Retriever  # noqa: E402


class EncodedExactIndex(ExactIndex):
    """The exact index, scoring the rows and the query as an index of this encoding holds
    and receives them."""

    def __init__(self, source: RecallSource, encoding: VectorEncoding) -> None:
        super().__init__(source)
        self.encoding = encoding

    def _matrix(
        self, user_id: str, persona: str | None, digests: Sequence[MemoryDigest], *, width: int
    ) -> _UserMatrix:
        state = super()._matrix(user_id, persona, digests, width=width)
        if not state.digests:
            return state
        return dataclasses.replace(state, matrix=as_stored(state.matrix, self.encoding))

    def search(
        self,
        user_id: str,
        query: Vectors,
        *,
        k: int,
        persona: str | None = None,
        visible: Sequence[MemoryDigest] | None = None,
    ) -> list[VectorHit]:
        sent = query_as_sent(query, self.encoding)
        return super().search(user_id, sent, k=k, persona=persona, visible=visible)


class Remembering(Embedder):
    """Embeds each question once for all encodings (a Bedrock call each with Titan)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._seen: dict[str, Vectors] = {}
        self.name = inner.name
        self.dimensions = inner.dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        missing = [text for text in dict.fromkeys(texts) if text not in self._seen]
        if missing:
            for text, vector in zip(missing, self._inner.embed(missing), strict=True):
                self._seen[text] = vector
        return np.stack([self._seen[text] for text in texts]).astype(np.float32)


def seed_both(container: Container) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    """Seed the two labelled sets; (set, split, user, question, needed ids) per question."""
    asked = []
    lena = Labelled.load(with_hints=True)
    ids = seed(container, prepare(container, lena), users=1)
    for query in lena.queries:
        needs = tuple(ids[label] for label in query["needs"])
        asked.append(("one user", query["split"], "bench-user-0", query["text"], needs))
    data = people.load()
    people_ids = people.seed(container, data["memories"])
    for query in data["queries"]:
        needs = tuple(people_ids[label] for label in query["needs"])
        user = people.user_id(query["user"])
        asked.append(("people", query["split"], user, query["text"], needs))
    return asked


def questions_under(
    container: Container,
    embedder: Embedder,
    encoding: VectorEncoding,
    asked: Sequence[tuple[str, str, str, str, tuple[str, ...]]],
) -> list[Question]:
    index = EncodedExactIndex(container.stores.recall, encoding)
    retriever = Retriever(
        container.stores, embedder, index, container.clock, container.retriever.relevance
    )
    questions = []
    for name, split, user, text, needs in asked:
        reading, candidates = retriever.parts(user, text)
        questions.append(Question(name, split, needs, reading, tuple(candidates)))
    return questions


def clipped_share(container: Container, users: Sequence[str]) -> float:
    """The share of stored components a byte field would clip (|x| > BYTE_RANGE)."""
    from chatmemory.domain import vectors  # noqa: PLC0415

    total = clipped = 0
    for user in users:
        digests = container.stores.recall.memory_digests(user)
        blobs = container.stores.recall.memory_embeddings(user, [d.memory_id for d in digests])
        for blob in blobs.values():
            rows = normalised(vectors.unpack_rows(blob))
            total += rows.size
            clipped += int(np.count_nonzero(np.abs(rows) > BYTE_RANGE))
    return clipped / max(total, 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "titan"))
    parser.add_argument("--region", default=None, help="AWS region (Titan)")
    parser.add_argument(
        "--dimensions", type=int, default=512, choices=(256, 512, 1024), help="Titan's size"
    )
    args = parser.parse_args()
    encodings = list(VectorEncoding)
    with tempfile.TemporaryDirectory(prefix="chatmemory-encoding-") as folder:
        settings = Settings(
            state_dir=Path(folder),
            embedder=args.embedder,
            region=args.region,
            titan_dimensions=args.dimensions,
            project_root=ROOT,
        )
        container = Container(settings, SystemClock())
        use_container(container)
        try:
            asked = seed_both(container)
            embedder = Remembering(container.embedder)
            by_encoding = {e: questions_under(container, embedder, e, asked) for e in encodings}
            users = sorted({user for _, _, user, _, _ in asked})
            clipped = clipped_share(container, users)
            params = container.retriever.relevance.params
            model = RelevanceModel(container.embedder, params)
        finally:
            use_container(None)
    bars = Bars.of(params)
    print(f"\n## Vector encodings, {container.embedder.name} ({container.embedder.dimensions}-d)\n")
    print(f"at {params}\n")
    print("| encoding | bytes/dim | set | split | Recall@5 | injection |")
    print("|---|---|---|---|---|---|")
    for encoding, questions in by_encoding.items():
        for name in ("one user", "people"):
            for split in ("dev", "test"):
                group = [q for q in questions if q.set == name and q.split == split]
                measured = quality(model, group, bars)
                print(
                    f"| {encoding.value} | {encoding.bytes_per_dimension} | {name} | {split} "
                    f"| {measured.recall:.3f} | {measured.injection:.3f} |"
                )
    reference = by_encoding[VectorEncoding.FLOAT32]
    print("\n| encoding | largest cosine change | mean change | questions sent other memories |")
    print("|---|---|---|---|")
    for encoding, questions in by_encoding.items():
        changes, differently = [], 0
        for base, other in zip(reference, questions, strict=True):
            scores = {c.memory_id: c for c in base.candidates}
            for candidate in other.candidates:
                twin = scores.get(candidate.memory_id)
                if twin is not None and twin.said is not None and candidate.said is not None:
                    changes.append(abs(candidate.said - twin.said))
            if set(_sent(model, base, bars)) != set(_sent(model, other, bars)):
                differently += 1
        print(
            f"| {encoding.value} | {max(changes, default=0.0):.5f} "
            f"| {statistics.fmean(changes) if changes else 0.0:.5f} "
            f"| {differently} of {len(questions)} |"
        )
    print(f"\nbyte: {clipped:.5%} of the stored components lie beyond ±{BYTE_RANGE} and clip")


def _sent(model: RelevanceModel, question: Question, bars: Bars) -> tuple[str, ...]:
    """What the turn would send, decided as `calibrate.quality` decides it."""
    gate = model.gate_score(question.reading)
    if bars.gate_floor is not None and gate < bars.gate_floor:
        return ()
    matches = {c.memory_id: model.match(c) for c in question.candidates}
    return bars.cut(matches, threshold=bars.best_bar(gate))


if __name__ == "__main__":
    main()
