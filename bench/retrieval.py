"""Retrieval benchmark: latency of the read path, and whether it recalls the right memories.

Run:  .venv/bin/python bench/retrieval.py            (full run, ~3 minutes)
      .venv/bin/python bench/retrieval.py --no-mem0  (skip the peer baseline)

What it does, in one run, on the labelled set in bench/data/:
1. seeds N users x 500 memories into a fresh SQLite store through the real write path
   (the indexer embeds each memory's words and its uses with the local MiniLM model);
2. latency, over every labelled query (≥ 200): recall (embed + search + visible rows +
   scoring) and the whole /v1/context assembly, in-process; then /v1/context over the
   local HTTP server with a real token;
3. mem0 (offline, same MiniLM model, its local faiss store, `infer=False` adds) on the
   same memories and queries: search p50/p95, and our recall p95 / mem0's p95;
4. quality on the dev and test splits: Recall@5 on questions that need a memory, and the
   injection rate on questions that need none, as a curve over the threshold;
5. where the needs-memory questions miss (bench/recall_breakdown.py): gate closed, nothing
   above the threshold, only unrelated memories, partial and full hits; one- and two-memory
   questions apart; the share of what was sent that was needed; memories sent per question;
6. after-correction questions (bench/corrections.py), as their own pass on their own user
   so the numbers above stay comparable: the corrections in bench/data go through
   `MemoryService.correct`, then: was the corrected version sent, and did the superseded
   text leak into what was sent;
7. the people set (bench/people.py): thirty users whose memories were typed through the
   API, with the same breakdown, by tag, and their corrections.
Thresholds and weights were chosen on the dev splits (bench/calibrate.py); the test
splits are reported as is.
Numbers go to stdout (markdown) and bench/.work/retrieval-<time>.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from corrections import load as load_corrections  # noqa: E402 - bench/ is on sys.path
from corrections import print_corrections, run_corrections  # noqa: E402
from people import load as load_people  # noqa: E402
from people import print_people, run_people  # noqa: E402
from recall_breakdown import Bars, breakdown, print_breakdown, turn, where_missed  # noqa: E402

from chatmemory.adapters.clock import SystemClock  # noqa: E402
from chatmemory.config import Container, Settings, use_container  # noqa: E402
from chatmemory.domain.memory import Memory  # noqa: E402
from chatmemory.services.context import ContextRequest  # noqa: E402
from chatmemory.services.retrieval import Retriever  # noqa: E402

DATA = ROOT / "bench" / "data"
WORK = ROOT / "bench" / ".work"
#: the extractor's uses for the labelled memories, under today's rule
#: (prompts/memory_uses_rule.txt) and under the earlier one (three to six uses, of which
#: the row kept two)
HINTS = "retrieval_memory_hints.jsonl"
EARLIER_HINTS = "retrieval_memory_hints_v1.jsonl"


@dataclass
class Labelled:
    memories: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    hints: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, with_hints: bool, hints_file: str = HINTS) -> Labelled:
        def lines(name: str) -> list[dict[str, Any]]:
            return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line]

        hints = {}
        if with_hints and (DATA / hints_file).exists():
            hints = {row["id"]: row for row in lines(hints_file)}
        return cls(lines("retrieval_memories.jsonl"), lines("retrieval_queries.jsonl"), hints)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(run: Callable[[], object], repeats: Sequence[object]) -> list[float]:
    """Milliseconds per call, after a short warm-up."""
    for _ in range(min(10, len(repeats))):
        run()
    samples = []
    for _ in repeats:
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


# ---- seeding ---------------------------------------------------------------------------


def prepare(container: Container, data: Labelled) -> dict[str, Memory]:
    """Every labelled memory with its uses and vectors, as a template row (no user yet)."""
    indexer = container.indexer
    now = container.clock.now()
    prepared: dict[str, Memory] = {}
    for row in data.memories:
        hint = data.hints.get(row["id"], {})
        meta = {"uses": hint["uses"]} if hint.get("uses") else {}
        template = Memory(
            user_id="template",
            memory_id=f"mem_{row['id']}",
            text=row["text"],
            category=row["category"],
            importance=int(hint.get("importance", 5)),
            created_at=now,
            updated_at=now,
            meta=meta,
        )
        prepared[row["id"]] = indexer.prepare(template)
    return prepared


def seed(container: Container, prepared: dict[str, Memory], users: int) -> dict[str, str]:
    """Write every memory for every user; returns labelled id → memory id (for user 0)."""
    ids: dict[str, str] = {}
    for user in range(users):
        user_id = f"bench-user-{user}"
        for label, template in prepared.items():
            memory = template.with_changes(user_id=user_id, memory_id=f"mem_u{user}_{label}")
            container.stores.memories.add_memory(memory)
            if user == 0:
                ids[label] = memory.memory_id
    return ids


# ---- quality ---------------------------------------------------------------------------


@dataclass
class Judged:
    """For each query: the gate's score and every candidate's match (before any cut)."""

    gate: dict[str, float]
    matches: dict[str, dict[str, float]]  # query id → memory id → match


def judge(container: Container, data: Labelled, user_id: str) -> Judged:
    retriever = container.retriever
    gate, matches = {}, {}
    for query in data.queries:
        gate[query["id"]], matches[query["id"]] = retriever.explain(user_id, query["text"])
    return Judged(gate, matches)


def plain_cosine(container: Container, data: Labelled, user_id: str) -> Judged:
    """What a bare similarity search scores: cosine to the memory's words, no gate."""
    from chatmemory.domain import vectors  # noqa: PLC0415

    digests = container.stores.recall.memory_digests(user_id)
    blobs = container.stores.recall.memory_embeddings(user_id, [d.memory_id for d in digests])
    owners = list(blobs)
    matrix = np.stack([vectors.unpack_rows(blobs[memory_id])[0] for memory_id in owners])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = container.embedder.embed([q["text"] for q in data.queries])
    matches = {}
    for query, row in zip(data.queries, queries @ matrix.T, strict=True):
        best = np.argsort(-row)[:40]
        matches[query["id"]] = {owners[i]: float(row[i]) for i in best}
    return Judged({q["id"]: 0.0 for q in data.queries}, matches)


def quality(
    judged: Judged, data: Labelled, ids: dict[str, str], bars: Bars, *, split: str
) -> tuple[float, float]:
    """(Recall@5 on needs-memory queries, injection rate on no-memory queries)."""
    recalls, injected = [], []
    for query in data.queries:
        if split != "all" and query["split"] != split:
            continue
        needed = [ids[label] for label in query["needs"]]
        one = turn(query["id"], needed, judged.gate[query["id"]], judged.matches[query["id"]], bars)
        if query["kind"] == "needs_memory":
            recalls.append(one.hits / len(needed))
        else:
            injected.append(bool(one.sent))
    return statistics.fmean(recalls), statistics.fmean(injected)


def curve(
    judged: Judged, data: Labelled, ids: dict[str, str], bars: Bars, split: str, *, over: str
) -> list[tuple[float, float, float]]:
    """Recall and injection as one knob moves ("threshold" — the companion bar keeping its
    distance — or "gate"), the other fixed."""
    if over == "gate":
        values = np.round(np.arange(-0.06, 0.1201, 0.02), 3)
        moved = [bars.moved(gate_floor=float(value)) for value in values]
    else:
        values = np.round(np.arange(0.10, 0.7001, 0.05), 3)
        moved = [bars.moved(threshold=float(value)) for value in values]
    return [
        (float(value), *quality(judged, data, ids, at, split=split))
        for value, at in zip(values, moved, strict=True)
    ]


def split_breakdown(
    judged: Judged, data: Labelled, ids: dict[str, str], bars: Bars, *, split: str
) -> dict[str, Any]:
    """The breakdown of one split (bench/recall_breakdown.py), at the service's settings."""
    needs, none = [], []
    for query in data.queries:
        if split != "all" and query["split"] != split:
            continue
        needed = [ids[label] for label in query["needs"]]
        one = turn(query["id"], needed, judged.gate[query["id"]], judged.matches[query["id"]], bars)
        (needs if query["kind"] == "needs_memory" else none).append(one)
    report = breakdown(needs, none)
    report["missed"] = where_missed(needs, judged.matches, bars)
    return report


def recall_agrees(
    container: Container, judged: Judged, data: Labelled, user_id: str
) -> dict[str, int]:
    """How many questions `Retriever.recall` answers with exactly the memories the
    breakdown's cut (from `explain`) says it sends: a check that the tables describe
    the real read path."""
    bars = Bars.of(container.retriever.relevance.params)
    agree = 0
    for query in data.queries:
        predicted = turn(
            query["id"], [], judged.gate[query["id"]], judged.matches[query["id"]], bars
        ).sent
        recalled = container.retriever.recall(user_id, query["text"])
        agree += tuple(item.memory.memory_id for item in recalled) == predicted
    return {"agree": agree, "queries": len(data.queries)}


def mem0_quality(found: dict[str, list[str]], data: Labelled, split: str) -> tuple[float, float]:
    recalls, injected = [], []
    for query in data.queries:
        if split != "all" and query["split"] != split:
            continue
        top = found[query["id"]][:5]
        if query["kind"] == "needs_memory":
            recalls.append(sum(label in top for label in query["needs"]) / len(query["needs"]))
        else:
            injected.append(bool(top))
    return statistics.fmean(recalls), statistics.fmean(injected)


# ---- the run ---------------------------------------------------------------------------


def latency(
    container: Container, settings: Settings, texts: list[str], user: str, *, http: bool
) -> dict[str, dict[str, float]]:
    """Milliseconds per call of each part of the read path, over every labelled query."""
    cycle = iter(texts * 3)
    search_ms = timed(lambda: container.retriever.candidates(user, next(cycle)), texts)
    cycle = iter(texts * 3)
    recall_ms = timed(lambda: container.retriever.recall(user, next(cycle)), texts)
    cycle = iter(texts * 3)
    context_ms = timed(
        lambda: container.context.build(ContextRequest(user_id=user, message=next(cycle))),
        texts,
    )
    cycle = iter(texts * 3)
    embed_ms = timed(lambda: container.embedder.embed([next(cycle)]), texts)
    reranking = _with_stubbed_reranker(container)
    cycle = iter(texts * 3)
    rerank_ms = timed(lambda: reranking.recall(user, next(cycle)), texts)
    measured = {
        "embed only": _summary(embed_ms),
        "embed + search + score (every query searches)": _summary(search_ms),
        "recall (gate first: impersonal turns skip the search)": _summary(recall_ms),
        "whole /v1/context assembly, in-process": _summary(context_ms),
        "recall + Bedrock Rerank of the qualified (service stubbed: our side only)": _summary(
            rerank_ms
        ),
    }
    if http:
        measured["/v1/context over the local HTTP server"] = _summary(
            _over_http(settings, texts, user)
        )
    return measured


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = Labelled.load(with_hints=args.hints, hints_file=EARLIER_HINTS if args.earlier else HINTS)
    report: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "users": args.users,
        "memories_per_user": len(data.memories),
        "queries": len(data.queries),
        "hints": (
            ("recorded extractor uses" + (", the earlier rule" if args.earlier else ""))
            if data.hints
            else "category uses (offline)"
        ),
    }
    with tempfile.TemporaryDirectory(prefix="chatmemory-bench-") as folder:
        settings = Settings(state_dir=Path(folder), embedder="minilm", project_root=ROOT)
        container = Container(settings, SystemClock())
        use_container(container)
        started = time.perf_counter()
        prepared = prepare(container, data)
        ids = seed(container, prepared, args.users)
        report["seed_seconds"] = round(time.perf_counter() - started, 1)
        user = "bench-user-0"
        texts = [q["text"] for q in data.queries]
        report["embedder"] = container.embedder.name
        report["runtime"] = getattr(container.embedder, "runtime", "?")

        # -- latency, in-process (and over HTTP)
        report["latency_ms"] = latency(container, settings, texts, user, http=not args.no_http)

        # -- quality
        judged = judge(container, data, user)
        params = container.retriever.relevance.params
        bars = Bars.of(params)
        report["threshold"], report["gate_floor"] = bars.threshold, bars.gate_floor
        report["companion_threshold"] = bars.companion
        report["companion_ratio"] = bars.companion_ratio
        report["quality"] = {}
        for split in ("dev", "test", "all"):
            recall, injection = quality(judged, data, ids, bars, split=split)
            report["quality"][split] = {"recall_at_5": recall, "injection_rate": injection}
        for split in ("dev", "test"):
            for knob in ("threshold", "gate"):
                report[f"curve_{split}_{knob}"] = curve(judged, data, ids, bars, split, over=knob)
        report["breakdown"] = {
            split: split_breakdown(judged, data, ids, bars, split=split)
            for split in ("dev", "test", "all")
        }
        report["recall_matches_explain"] = recall_agrees(container, judged, data, user)
        plain = plain_cosine(container, data, user)
        report["curve_test_plain_cosine"] = curve(
            plain, data, ids, Bars(0.0, None), "test", over="threshold"
        )

        # Last of our passes, on a user of its own: nothing above is measured after it.
        corrections = load_corrections(DATA)
        if corrections:
            report["after_correction"] = run_corrections(container, prepared, corrections)
        if args.people:
            report["people"] = run_people(container, load_people(DATA))

        if not args.no_mem0 and importlib.util.find_spec("mem0") is None:
            print("mem0 is not installed (`make bench` installs it): the peer baseline is left out")
        elif not args.no_mem0:
            report["mem0"] = _mem0(Path(folder) / "mem0", data, texts)
            ours = report["latency_ms"]["embed + search + score (every query searches)"]["p95"]
            report["p95_ratio_recall_vs_mem0"] = round(ours / report["mem0"]["search_ms"]["p95"], 3)
        use_container(None)
    return report


def _with_stubbed_reranker(container: Container) -> Retriever:
    """The retriever with the real Bedrock reranker over a real boto3 client whose HTTP
    answer is made here (every document 0.5, in the order sent): what reranking costs on
    our side — the extra rows read, the request built and the answer parsed — without the
    service's own time, which needs an account to measure."""
    import boto3  # noqa: PLC0415
    from botocore.awsrequest import AWSResponse  # noqa: PLC0415
    from botocore.compat import HTTPHeaders  # noqa: PLC0415

    from chatmemory.adapters.bedrock_reranker import BedrockReranker, model_arn  # noqa: PLC0415

    class Body:
        def __init__(self, raw: bytes) -> None:
            self._raw = raw

        def stream(self, **_: object) -> Any:
            yield self._raw

    def answer(request: Any, **_: object) -> AWSResponse:
        body = json.loads(request.body)
        wanted = body["rerankingConfiguration"]["bedrockRerankingConfiguration"]["numberOfResults"]
        results = [{"index": at, "relevanceScore": 0.5} for at in range(wanted)]
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/json"
        return AWSResponse(
            request.url, 200, headers, Body(json.dumps({"results": results}).encode())
        )

    client = boto3.client(
        "bedrock-agent-runtime",
        region_name="us-west-2",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",  # noqa: S106 - never leaves this process
    )
    client.meta.events.register("before-send.bedrock-agent-runtime.Rerank", answer)
    reranker = BedrockReranker(client, model_arn=model_arn("us-west-2"))
    return Retriever(
        container.stores,
        container.embedder,
        container.index,
        container.clock,
        container.relevance,
        reranker=reranker,
    )


def _summary(samples: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(samples, 0.50), 2),
        "p95": round(percentile(samples, 0.95), 2),
        "n": len(samples),
    }


def _over_http(settings: Settings, texts: list[str], user: str) -> list[float]:
    from chatmemory.local.server import LocalGateway, LocalServer  # noqa: PLC0415
    from chatmemory.local.tokens import LocalTokens, load_or_create_secret  # noqa: PLC0415

    tokens = LocalTokens(load_or_create_secret(settings.state_dir))
    server = LocalServer("127.0.0.1", 0, LocalGateway(ROOT, tokens))
    server.start()
    token = tokens.issue(user, datetime.now(UTC))
    try:
        cycle = iter(texts * 3)

        def call() -> None:
            body = json.dumps({"message": next(cycle)}).encode()
            request = Request(f"{server.url}/v1/context", data=body, method="POST")  # noqa: S310
            request.add_header("Authorization", f"Bearer {token}")
            request.add_header("Content-Type", "application/json")
            with urlopen(request, timeout=30) as response:  # noqa: S310 - our own local server
                response.read()

        return timed(call, texts)
    finally:
        server.stop()


def _mem0(workdir: Path, data: Labelled, texts: list[str]) -> dict[str, Any]:
    from mem0_baseline import Mem0Baseline  # noqa: PLC0415 - bench/ is on sys.path

    from chatmemory.adapters.minilm_embedder import packaged_model_dir  # noqa: PLC0415

    with Mem0Baseline(workdir, packaged_model_dir(), vector_store="faiss") as mem0:
        mem0.add("u", [m["text"] for m in data.memories], refs=[m["id"] for m in data.memories])
        cycle = iter(texts * 3)
        search_ms = timed(lambda: mem0.search("u", next(cycle), k=5), texts)
        found = {q["id"]: mem0.search("u", q["text"], k=5) for q in data.queries}
    return {
        "search_ms": _summary(search_ms),
        "quality": {
            split: dict(
                zip(
                    ("recall_at_5", "injection_rate"), mem0_quality(found, data, split), strict=True
                )
            )
            for split in ("dev", "test", "all")
        },
    }


def print_report(report: dict[str, Any]) -> None:
    print(f"\n## Retrieval benchmark ({report['when']})\n")
    print(
        f"{report['users']} users x {report['memories_per_user']} memories, "
        f"{report['queries']} queries, embedder {report['embedder']} ({report['runtime']}), "
        f"memory uses: {report['hints']}, threshold {report['threshold']}, "
        f"gate floor {report['gate_floor']}\n"
    )
    print("| path | p50 ms | p95 ms | n |\n|---|---|---|---|")
    for name, row in report["latency_ms"].items():
        print(f"| {name} | {row['p50']} | {row['p95']} | {row['n']} |")
    if "mem0" in report:
        row = report["mem0"]["search_ms"]
        print(f"| mem0 search (faiss, same model) | {row['p50']} | {row['p95']} | {row['n']} |")
        print(
            "\nour embed + search p95 / mem0 search p95 = "
            f"**{report['p95_ratio_recall_vs_mem0']}** (same model, memories and queries)"
        )
    print("\n| split | Recall@5 | injection rate |\n|---|---|---|")
    rows = [(f"{split} (chatmemory)", row) for split, row in report["quality"].items()]
    if "mem0" in report:
        rows += [
            (f"{split} (mem0, top 5)", row) for split, row in report["mem0"]["quality"].items()
        ]
    for label, row in rows:
        print(f"| {label} | {row['recall_at_5']:.3f} | {row['injection_rate']:.3f} |")
    if "breakdown" in report:
        print_breakdown({split: report["breakdown"][split] for split in ("dev", "test")})
        check = report["recall_matches_explain"]
        print(
            f"\n(`Retriever.recall` sent exactly the memories of this cut on "
            f"{check['agree']} of {check['queries']} queries.)"
        )
    if "after_correction" in report:
        print_corrections(report["after_correction"])
    if "people" in report:
        print_people(report["people"])
    for title, key, knob in (
        (
            "chatmemory, gate at its floor, over the match threshold",
            "curve_test_threshold",
            "threshold",
        ),
        ("chatmemory, threshold fixed, over the gate floor", "curve_test_gate", "gate floor"),
        ("plain cosine to the memory's words, no gate", "curve_test_plain_cosine", "threshold"),
    ):
        print(f"\nTest split, {title}:\n")
        print(f"| {knob} | Recall@5 | injection |\n|---|---|---|")
        for value, recall, injection in report[key]:
            print(f"| {value:.2f} | {recall:.3f} | {injection:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=3)
    parser.add_argument("--no-mem0", action="store_true", help="skip the mem0 baseline")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP measurement")
    parser.add_argument(
        "--earlier-uses",
        dest="earlier",
        action="store_true",
        help="the extractor's uses as the earlier rule wrote them (bench/data's _v1 file)",
    )
    parser.add_argument(
        "--no-people", dest="people", action="store_false", help="skip the people set's pass"
    )
    parser.add_argument(
        "--no-hints",
        dest="hints",
        action="store_false",
        help="index category uses only (as offline) instead of the recorded extractor uses",
    )
    args = parser.parse_args()
    report = run(args)
    WORK.mkdir(parents=True, exist_ok=True)
    out = WORK / f"retrieval-{report['when'].replace(':', '')}.json"
    out.write_text(json.dumps(report, indent=2))
    print_report(report)
    print(f"\n(raw numbers: {out.relative_to(ROOT)})")


if __name__ == "__main__":
    main()
