"""Per-turn read units bench: what one `/v1/context` reads as a user's history grows.

Run:  .venv/bin/python bench/read_units.py [--history 50 500 5000] [--in-use 40] [--detail]

For each history size, a fresh moto DynamoDB table built from template.yaml holds one
user with `--in-use` memories in use, that many history rows (facts corrected again and
again and then closed, beliefs set aside by the cap, faded ones, deleted ones) and 20
conversations. The service call behind `/v1/context` (the context service wired as
config wires it: the exact index, and the OpenSearch path against a fake collection)
builds a turn's context in an ongoing chat and in a new one, twice each: the first call
warms the exact index's vectors, as a warm container holds them; the second is metered.
Every request's read units are worked out from the bytes it read, by DynamoDB's billing
rules (tests/support/read_units.py): moto's own `ConsumedCapacity` is a fixed number
per call.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))
sys.path.insert(0, str(ROOT))

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

from chatmemory.adapters.clock import ManualClock  # noqa: E402
from chatmemory.adapters.exact_index import ExactIndex  # noqa: E402
from chatmemory.adapters.hashing_embedder import HashingEmbedder  # noqa: E402
from chatmemory.adapters.opensearch_index import OpenSearchIndex  # noqa: E402
from chatmemory.ports.stores import Stores  # noqa: E402
from chatmemory.ports.vector_index import VectorIndex  # noqa: E402
from chatmemory.services.context import ContextRequest, ContextService  # noqa: E402
from chatmemory.services.indexing import MemoryIndexer  # noqa: E402
from chatmemory.services.relevance import RelevanceModel, params_for  # noqa: E402
from chatmemory.services.retrieval import Retriever  # noqa: E402
from tests.support import history  # noqa: E402
from tests.support.fast_moto import quick_transactions  # noqa: E402
from tests.support.opensearch_fake import FakeCollection  # noqa: E402
from tests.support.read_units import Reads, metered  # noqa: E402
from tests.support.template import create_table_from_template  # noqa: E402

REGION = "eu-west-1"
TABLE = "chatmemory-bench"
USER = "bench-reader"
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
# The same for every history size: what grows here is the memory history alone.
CONVERSATIONS = 20


@contextmanager
def fake_aws() -> Iterator[None]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ[name] = "testing"
    os.environ["AWS_DEFAULT_REGION"] = REGION
    with mock_aws():
        yield


def context_service(
    stores: Stores, clock: ManualClock, index: VectorIndex, embedder: HashingEmbedder
) -> ContextService:
    relevance = RelevanceModel(embedder, params_for(embedder.name, threshold=0.25))
    return ContextService(stores, clock, Retriever(stores, embedder, index, clock, relevance))


def measure(history_rows: int, in_use: int) -> dict[str, Reads]:
    from chatmemory.adapters.dynamodb import dynamodb_stores  # noqa: PLC0415

    measured: dict[str, Reads] = {}
    with fake_aws():
        create_table_from_template(boto3.client("dynamodb", region_name=REGION), TABLE)
        with metered(REGION) as meter:
            clock = ManualClock(START)
            stores = dynamodb_stores(table_name=TABLE, region=REGION, clock=clock)
            embedder = HashingEmbedder()
            exact = ExactIndex(stores.recall)
            with quick_transactions():
                past = history.seed(
                    stores,
                    clock,
                    MemoryIndexer(embedder, exact),
                    USER,
                    in_use=in_use,
                    history=history_rows,
                    conversations=CONVERSATIONS,
                )
            opensearch = OpenSearchIndex(
                client=FakeCollection(refresh_on_write=True).client(),
                index_name="memories",
                dimensions=embedder.dimensions,
                clock=clock,
            )
            opensearch.ensure_index()
            for memory in stores.memories.iter_memories(USER):
                opensearch.upsert(memory)
            for name, index in (("exact", exact), ("opensearch", opensearch)):
                service = context_service(stores, clock, index, embedder)
                for label, conversation_id in (
                    ("ongoing chat", past.conversation_id),
                    ("new chat", None),
                ):
                    request = ContextRequest(
                        user_id=USER, message=history.QUESTION, conversation_id=conversation_id
                    )
                    built = service.build(request)  # warms the exact index's vectors
                    assert built.memories_used, "the turn must recall something"
                    with meter.counting() as reads:
                        service.build(request)
                    measured[f"{name}, {label}"] = reads
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, nargs="+", default=[50, 500, 5000])
    parser.add_argument("--in-use", type=int, default=40)
    parser.add_argument("--detail", action="store_true", help="per operation")
    args = parser.parse_args()
    print(f"in use: {args.in_use} memories; read units per /v1/context (strongly consistent)")
    print(f"{'history rows':>12}  {'path':<26} {'requests':>8} {'items':>7} {'RCU':>8}")
    for rows in args.history:
        started = time.perf_counter()
        results = measure(rows, args.in_use)
        for path, reads in results.items():
            print(
                f"{rows:>12,}  {path:<26} {len(reads.requests):>8} "
                f"{reads.items:>7,} {reads.units:>8,.1f}"
            )
            if args.detail:
                for operation, (count, items, units) in reads.by_target().items():
                    print(f"{'':>14}  {operation:<24} {count:>8} {items:>7,} {units:>8,.1f}")
        print(f"{'':>14}({time.perf_counter() - started:.0f} s to seed and measure)")


if __name__ == "__main__":
    main()
