"""Cost model: what seed 002's traffic costs on AWS, per turn, per user and per month.

Run:  .venv/bin/python bench/cost_model.py      (or `make cost`; about a minute, offline)

What is measured, with the real code, and what is assumed:
- Every handler runs in-process as Lambda would call it (the sample events in events/),
  on a DynamoDB table built from template.yaml under moto, SQS and Step Functions under
  moto, and the OpenSearch adapter over the in-memory collection the tests use; the
  embedder is the hashing one at the stack's Titan size (512 dimensions, rows sized as on
  AWS; the index at the stack's fp16 encoding) and
  the model is the offline stand-in, so nothing leaves the process.
- CPU per request is this process's CPU time in the handler, less the time spent inside
  moto, the fake collection, the embedder and this bench's own meters (those stand for
  AWS services, whose time the function only waits for). It is scaled to the CPU a
  512 MB function gets (1,769 MB = one vCPU) and the waits are added: each DynamoDB,
  SQS, Step Functions and OpenSearch call, each embedding, each model call — the figures
  in ASSUMPTIONS, all cited or marked assumed.
- DynamoDB units come from a botocore event hook on every DynamoDB client: it sizes the
  items each request reads or writes (DynamoDB's item-size rules) by reading the same
  keys again, unprojected and unfiltered, from the table, and bills them as on-demand
  does: reads per 4 KB (strongly consistent 1 unit, eventually 0.5, transactional 2),
  writes per 1 KB (the larger of the item before and after; transactional x2).
- Model tokens are seed 002's counts (a turn's 5,200 input tokens, an extraction's
  4,300, a fold's 2,000) at seed 002's assumed prices, with and without prompt caching;
  the published prices of the configured models are shown beside them.
- Log bytes are the lines the handlers write (powertools JSON logs and EMF metrics),
  captured per request, plus Lambda's own START/END/REPORT lines (assumed size).

Every price and outside figure lives in PRICES and ASSUMPTIONS below, each with its
source and the date it was read: update them there. Nothing is written to the repo.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import logging
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))
sys.path.insert(0, str(ROOT))

from chatmemory.config import Settings  # noqa: E402 - after the path is set
from chatmemory.domain.vector_encoding import VectorEncoding  # noqa: E402

STARTED = time.perf_counter()
READ = "2026-12-04"  # the day every source below was read


@dataclass(frozen=True)
class Sourced:
    """One price or outside figure: its value, unit, where it is published, when read."""

    value: float
    unit: str
    source: str
    read: str = READ
    note: str = ""


# ---- prices: the one place to update (US East (N. Virginia) unless said) ---------------

PRICES: dict[str, Sourced] = {
    "lambda_gb_second_arm": Sourced(
        0.0000133334,
        "USD per GB-second, arm64, first 7.5 billion GB-s a month",
        "https://aws.amazon.com/lambda/pricing/ (figure as listed by "
        "https://cloudchipr.com/blog/aws-lambda-pricing)",
        note="the official page renders its price table by script; the figure is the "
        "one every secondary source quotes",
    ),
    "lambda_request": Sourced(
        0.20 / 1e6,
        "USD per request",
        "https://aws.amazon.com/lambda/pricing/ (figure as listed by "
        "https://git.mcrn.ar/mariano/lambda_local_runner, docs/lambdas-md/lambda-13-cost.md)",
    ),
    "dynamodb_wru": Sourced(
        0.625 / 1e6,
        "USD per write request unit, on-demand, Standard table class",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/ (figure as listed by "
        "https://airbyte.com/data-engineering-resources/dynamodb-pricing)",
    ),
    "dynamodb_rru": Sourced(
        0.125 / 1e6,
        "USD per read request unit, on-demand, Standard table class",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/ (figure as listed by "
        "https://airbyte.com/data-engineering-resources/dynamodb-pricing)",
    ),
    "dynamodb_storage_gb_month": Sourced(
        0.25,
        "USD per GB-month stored (Standard table class, past the free 25 GB)",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
        note="assumed: the long-standing us-east-1 figure; not in the stored copy read",
    ),
    "opensearch_ocu_hour": Sourced(
        0.24,
        "USD per OCU-hour (indexing or search), OpenSearch Serverless",
        "https://aws.amazon.com/opensearch-service/pricing/ (figure as listed by "
        "https://awsnegotiations.com/opensearch-serverless-cost and "
        "https://teamaws.com/?p=1428)",
    ),
    "opensearch_storage_gb_month": Sourced(
        0.024,
        "USD per GB-month of managed storage (S3-backed), OpenSearch Serverless",
        "https://aws.amazon.com/opensearch-service/pricing/ (figure as listed by "
        "https://cloudburn.io/blog/amazon-opensearch-pricing)",
    ),
    "sfn_standard_transition": Sourced(
        0.025 / 1000,
        "USD per state transition, Standard workflows (retries included)",
        "https://aws.amazon.com/step-functions/pricing/ (figure as listed by "
        "https://www.wring.co/blog/aws-step-functions-pricing-guide)",
    ),
    "sfn_express_request": Sourced(
        1.00 / 1e6,
        "USD per Express execution started",
        "https://aws.amazon.com/step-functions/pricing/ (figure as listed by "
        "https://www.wring.co/blog/aws-step-functions-pricing-guide)",
    ),
    "sfn_express_gb_second": Sourced(
        0.00001667,
        "USD per GB-second of Express duration (first 1,000 GB-hours), billed per "
        "100 ms in 64 MB chunks",
        "https://aws.amazon.com/step-functions/pricing/ (figure as listed by "
        "https://www.wring.co/blog/aws-step-functions-pricing-guide)",
    ),
    "titan_v2_input_token": Sourced(
        0.02 / 1e6,
        "USD per input token, Amazon Titan Text Embeddings V2 on Bedrock, on-demand",
        "https://aws.amazon.com/bedrock/pricing/ (figure as listed by "
        "https://openrouter.ai/amazon/titan-embed-text-v2/providers, which passes "
        "Bedrock's price through)",
    ),
    "http_api_request": Sourced(
        1.00 / 1e6,
        "USD per HTTP API request (first 300 million a month; metered per 512 KB)",
        "https://aws.amazon.com/api-gateway/pricing/ (figure as listed by "
        "https://awsforengineers.com/blog/aws-api-gateway-pricing-explained)",
    ),
    "logs_ingest_gb": Sourced(
        0.50,
        "USD per GB ingested, CloudWatch Logs Standard (Lambda logs: first tier)",
        "https://aws.amazon.com/cloudwatch/pricing/ (figure as listed by "
        "https://www.duckbillgroup.com/?p=9080, on Lambda's tiered log pricing)",
    ),
    "sqs_request": Sourced(
        0.40 / 1e6,
        "USD per standard-queue request (each 64 KB of payload is one request)",
        "https://aws.amazon.com/sqs/pricing/ (figure as listed by "
        "https://cloudburn.io/blog/amazon-sqs-pricing)",
    ),
    # Model tokens. Seed 002's assumed prices are the baseline; the configured models'
    # published prices are shown beside them.
    "seed_chat_input_token": Sourced(
        0.5 / 1e6,
        "USD per input token, the chat model",
        "seed 002 (its assumed price)",
    ),
    "seed_chat_output_token": Sourced(
        2.0 / 1e6, "USD per output token, the chat model", "seed 002 (its assumed price)"
    ),
    "seed_small_input_token": Sourced(
        0.1 / 1e6,
        "USD per input token, the small model (extraction, folds)",
        "seed 002 (its assumed price)",
    ),
    "seed_small_output_token": Sourced(
        0.4 / 1e6, "USD per output token, the small model", "seed 002 (its assumed price)"
    ),
    "sonnet_5_5_input_token": Sourced(
        2.0 / 1e6,
        "USD per input token, claude-sonnet-5-5 (the configured chat model)",
        "https://platform.claude.com/docs/zh-CN/models/sonnet-5-5/overview",
    ),
    "sonnet_5_5_output_token": Sourced(
        10.0 / 1e6,
        "USD per output token, claude-sonnet-5-5",
        "https://platform.claude.com/docs/zh-CN/models/sonnet-5-5/overview",
    ),
    "haiku_5_5_input_token": Sourced(
        0.10 / 1e6,
        "USD per input token, claude-haiku-5-5 (the configured fast model; prompts up "
        "to 100k tokens)",
        "https://platform.claude.com/docs/en/about-claude/pricing (figure as listed by "
        "https://github.com/kurofune/claudit/releases/tag/v1.9.2)",
    ),
    "haiku_5_5_output_token": Sourced(
        0.50 / 1e6,
        "USD per output token, claude-haiku-5-5",
        "https://platform.claude.com/docs/en/about-claude/pricing (figure as listed by "
        "https://github.com/kurofune/claudit/releases/tag/v1.9.2)",
    ),
    "cache_write_5m_multiple": Sourced(
        1.25,
        "x the input price, per token written to the 5-minute prompt cache",
        "https://platform.claude.com/docs/en/build-with-claude/prompt-caching and "
        "https://platform.claude.com/docs/en/about-claude/pricing",
    ),
    "cache_read_multiple": Sourced(
        0.10,
        "x the input price, per token read from the prompt cache",
        "https://platform.claude.com/docs/en/build-with-claude/prompt-caching and "
        "https://platform.claude.com/docs/en/about-claude/pricing",
        note="Sonnet 5.5's cache reads were reported cut to 0.05x on 2026-10-07 "
        "(github.com/kurofune/claudit v1.9.2); 0.1x kept, the conservative figure",
    ),
}

# ---- outside figures the model rests on -------------------------------------------------

ASSUMPTIONS: dict[str, Sourced] = {
    "lambda_mb_per_vcpu": Sourced(
        1769,
        "MB of function memory that come with one full vCPU (CPU share grows with memory)",
        "https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html",
    ),
    "lambda_memory_mb": Sourced(
        512, "MB, every function (template.yaml Globals MemorySize, arm64)", "template.yaml"
    ),
    "model_ttft_s": Sourced(
        1.80,
        "s to the first token (Claude Sonnet 4.5 on Anthropic's API, Artificial Analysis)",
        "https://lattice.uptownhr.com/claude-opus-4-5/speed-analysis",
        note="assumed for every model call: no figure found for the 5.5 models; the fast "
        "tier is quicker, so its waits are overstated",
    ),
    "model_tokens_per_s": Sourced(
        63,
        "output tokens a second once streaming (Claude Sonnet 4.5, Artificial Analysis)",
        "https://lattice.uptownhr.com/claude-opus-4-5/speed-analysis",
        note="assumed for every model call, as above",
    ),
    "dynamodb_call_s": Sourced(
        0.005,
        "s a DynamoDB request takes, seen from the function",
        "https://aws.amazon.com/dynamodb/ ('single-digit millisecond performance')",
        note="assumed: 5 ms, inside the published single-digit range",
    ),
    "aws_call_s": Sourced(
        0.010,
        "s an SQS or Step Functions request takes, seen from the function",
        "assumed",
        note="no published latency; 10 ms is a round guess, small beside the model's wait",
    ),
    "embed_call_s": Sourced(
        0.020,
        "s one Titan embedding request takes",
        "seed 002 ('Embed 20 ms')",
        note="seed 002's assumption",
    ),
    "opensearch_call_s": Sourced(
        0.020,
        "s one OpenSearch Serverless request takes",
        "assumed",
        note="no published latency for a filtered k-NN query; 20 ms assumed",
    ),
    "lambda_platform_log_bytes": Sourced(
        450,
        "bytes of START, END and REPORT lines Lambda writes per invocation",
        "https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html",
        note="assumed from the lines' documented shape (REPORT with X-Ray trace id)",
    ),
    "ocu_ram_gib": Sourced(
        6,
        "GiB of RAM per OCU; vector collections are bound by RAM, not disk",
        "https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-scaling.html",
    ),
    "ocu_graph_share": Sourced(
        0.5,
        "share of an OCU's RAM that holds vector graphs",
        "https://docs.opensearch.org/latest/vector-search/performance-tuning/ (the k-NN "
        "plugin's memory circuit breaker defaults to 50 %)",
        note="assumed: AWS publishes no vectors-per-OCU figure for Serverless",
    ),
    "ocu_min_standby": Sourced(
        1.0,
        "OCU minimum each for indexing and for search with standby replicas "
        "(0.5 OCU x 2); 0.5 each without",
        "https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-scaling.html",
    ),
    "hnsw_m": Sourced(
        16,
        "HNSW m (links per vector): faiss's default; the index mapping sets none",
        "https://docs.opensearch.org/latest/mappings/supported-field-types/knn-methods-engines/",
    ),
    "hnsw_bytes_fp32": Sourced(
        1.1,
        "x (4 x dimensions + 8 x m) bytes of RAM per float32 vector in an HNSW graph",
        "https://docs.opensearch.org/latest/vector-search/creating-vector-index/method/",
    ),
    "hnsw_bytes_fp16": Sourced(
        1.1,
        "x (2 x dimensions + 8 x m) bytes of RAM per fp16 vector (faiss SQfp16)",
        "https://docs.opensearch.org/latest/vector-search/optimizing-storage/faiss-16-bit-quantization/",
    ),
    "hnsw_bytes_byte": Sourced(
        1.1,
        "x (1 x dimensions + 8 x m) bytes of RAM per byte vector in an HNSW graph",
        "https://docs.opensearch.org/latest/mappings/supported-field-types/knn-memory-optimized/",
    ),
    "cache_min_tokens": Sourced(
        1024,
        "tokens: the shortest prefix the prompt cache keeps (Sonnet 4.x line)",
        "https://platform.claude.com/docs/en/build-with-claude/prompt-caching",
        note="assumed to hold for Sonnet 5.5; Haiku 4.5 and Opus 4.5 need 4,096",
    ),
    "purges_per_active_user_day": Sourced(
        0.02,
        "purge runs a day per daily user (deleted memories, forget-everything)",
        "assumed",
        note="seed 002 gives no delete rate; one daily user in fifty deleting something",
    ),
    "list_memories_per_session": Sourced(
        0.2,
        "GET /v1/memories calls per session (a user opening their memory list)",
        "assumed",
        note="seed 002 gives no rate",
    ),
}

# ---- seed 002's traffic -------------------------------------------------------------------

SEED: dict[str, float] = {
    "registered_users": 1_000_000,
    "daily_users": 200_000,
    "turns_per_user_day": 15,
    "sessions_per_user_day": 1.5,
    "turns_per_fold": 4,
    "memories_per_user": 150,
    "mean_qps": 35,
    "peak_qps": 104,
    # tokens (seed 002's prompt budget)
    "system_tokens": 600,
    "profile_tokens": 300,
    "memories_tokens": 300,
    "summary_tokens": 400,
    "window_turns": 10,
    "turn_tokens": 350,
    "message_tokens": 100,
    "reply_tokens": 250,
    "extract_in": 4300,
    "extract_out": 150,
    "fold_in": 2000,
    "fold_out": 400,
    "seed_memory_share": 0.045,
}
DAYS = 30  # a month, as this model counts it
TURNS_DAY = SEED["daily_users"] * SEED["turns_per_user_day"]
SESSIONS_DAY = SEED["daily_users"] * SEED["sessions_per_user_day"]
FOLDS_DAY = TURNS_DAY / SEED["turns_per_fold"]
ROUTE_OUT_TOKENS = 100  # assumed: a routing answer (one decision per candidate)

SEEDED_BEFORE = timedelta(days=60)
REGION = "us-east-1"
TABLE = "chatmemory-cost"
ACCOUNT = "123456789012"
USER = "cost-user"
# The stack's defaults (template.yaml's VectorDimensions / VectorEncoding, the Settings').
TITAN_DIMENSIONS = Settings().titan_dimensions
VECTOR_ENCODING = Settings().vector_encoding
SCRIPT_CATEGORIES = {"diet", "health", "preferences", "education", "location", "schedule"}
MESSAGES = [
    "Hi! I'm vegetarian and I just moved to Bengaluru from Pune for a new job.",
    "I'm preparing for the GATE exam in February, mostly evenings after work.",
    "Can you suggest a weekly plan that leaves Sunday free for my sister's visits?",
    "I prefer short checklists to long paragraphs, by the way.",
    "What should I cook on weeknights that takes under twenty minutes?",
    "My weakest subject is algorithms; operating systems I already know well.",
    "How do I stop postponing mock tests? They make me anxious.",
    "Remember that I am allergic to peanuts.",
    "Any tips for studying on the commute? It's about forty minutes each way.",
    "Thanks, that helps. Could you make the plan for the next two weeks?",
    "I also play badminton on Saturday mornings, keep that free.",
    "What's a good breakfast before a long study session?",
    "Let's revise graph algorithms first. Where should I start?",
    "Can you give me three practice questions on shortest paths?",
    "Great, let's stop here for today.",
]


# ---- CPU accounting: time inside stand-ins for AWS is not the function's --------------


class Excluded:
    """CPU and wall time spent inside stand-ins for remote services (outermost only)."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.wall = 0.0
        self._depth = 0

    @contextlib.contextmanager
    def section(self) -> Iterator[None]:
        self._depth += 1
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.cpu += time.process_time() - cpu
                self.wall += time.perf_counter() - wall

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self.section():
                return function(*args, **kwargs)

        return wrapped


# ---- DynamoDB item sizes and units -------------------------------------------------------


def value_bytes(value: dict[str, Any]) -> int:  # noqa: PLR0911 - one case a type
    """Bytes DynamoDB counts for one attribute value (its item-size rules)."""
    kind, raw = next(iter(value.items()))
    if kind == "S":
        return len(raw.encode())
    if kind == "N":
        digits = str(raw).lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(raw) if isinstance(raw, bytes | bytearray) else len(raw) * 3 // 4
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(value_bytes({kind[0]: element}) for element in raw)
    if kind == "L":
        return 3 + sum(1 + value_bytes(element) for element in raw)
    if kind == "M":
        return 3 + sum(len(name.encode()) + 1 + value_bytes(v) for name, v in raw.items())
    raise ValueError(f"unknown DynamoDB type {kind}")


def item_bytes(item: dict[str, Any] | None) -> int:
    """An item's size as DynamoDB bills it: attribute name bytes plus value bytes."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_bytes(value) for name, value in item.items())


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / 4096))
    if transactional:
        return 2.0 * units
    return float(units) if consistent else units / 2


def write_units(size: int, *, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / 1024))
    return 2.0 * units if transactional else float(units)


@dataclass
class Usage:
    """What one request cost in remote calls."""

    rru: float = 0.0
    wru: float = 0.0
    calls: Counter[str] = field(default_factory=Counter)  # "dynamodb.Query", "sqs.SendMessage"
    written_items: list[int] = field(default_factory=list)  # sizes of items put

    def count(self, service: str) -> int:
        return sum(n for name, n in self.calls.items() if name.startswith(service + "."))


class Meter:
    """botocore hooks on every client: counts calls, bills DynamoDB reads and writes from
    the sizes of the items they touch (read again from the table, whole)."""

    def __init__(self, excluded: Excluded, key_names: tuple[str, ...]) -> None:
        self.excluded = excluded
        self.key_names = key_names
        self.usage = Usage()
        self.paused = True
        self._shadow: Any = None
        self._busy = False

    def attach(self, client: Any) -> None:
        events = client.meta.events
        events.register("before-parameter-build", self._before)
        events.register("after-call", self._after)

    def start(self, shadow_client: Any) -> None:
        self._shadow = shadow_client
        self.paused = False

    @contextlib.contextmanager
    def request(self) -> Iterator[Usage]:
        self.usage = Usage()
        yield self.usage

    # -- the shadow reads (never metered themselves) --

    def _get(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        self._busy = True
        try:
            item: dict[str, Any] | None = self._shadow.get_item(
                TableName=table, Key=key, ConsistentRead=True
            ).get("Item")
            return item
        finally:
            self._busy = False

    def _key(self, item: dict[str, Any]) -> dict[str, Any]:
        return {name: item[name] for name in self.key_names}

    def _query_bytes(self, operation: str, params: dict[str, Any]) -> int:
        """The bytes a Query or Scan reads: the items it evaluates, before any filter or
        projection (same key condition, limit and start key)."""
        shadow = {
            k: v
            for k, v in params.items()
            if k
            in (
                "TableName",
                "IndexName",
                "KeyConditionExpression",
                "Limit",
                "ExclusiveStartKey",
                "ScanIndexForward",
                "ConsistentRead",
                "ExpressionAttributeNames",
                "ExpressionAttributeValues",
            )
        }
        condition = shadow.get("KeyConditionExpression", "")
        if "ExpressionAttributeNames" in shadow:
            shadow["ExpressionAttributeNames"] = {
                k: v for k, v in shadow["ExpressionAttributeNames"].items() if k in condition
            } or None
        if "ExpressionAttributeValues" in shadow:
            shadow["ExpressionAttributeValues"] = {
                k: v for k, v in shadow["ExpressionAttributeValues"].items() if k in condition
            } or None
        shadow = {k: v for k, v in shadow.items() if v is not None}
        self._busy = True
        try:
            call = self._shadow.query if operation == "Query" else self._shadow.scan
            items = call(**shadow).get("Items", [])
        finally:
            self._busy = False
        return sum(item_bytes(item) for item in items)

    # -- the hooks --

    def _before(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        if self.paused or self._busy:
            return
        with self.excluded.section():
            service = model.service_model.service_name
            self.usage.calls[f"{service}.{model.name}"] += 1
            if service != "dynamodb":
                return
            context["cost_params"] = copy.deepcopy(params)
            context["cost_before"] = self._before_sizes(model.name, params)

    def _before_sizes(self, operation: str, params: dict[str, Any]) -> list[int]:
        """Sizes of the items a write will replace, in the order it names them."""
        if operation in ("PutItem",):
            return [item_bytes(self._get(params["TableName"], self._key(params["Item"])))]
        if operation in ("UpdateItem", "DeleteItem"):
            return [item_bytes(self._get(params["TableName"], params["Key"]))]
        if operation == "TransactWriteItems":
            sizes = []
            for entry in params["TransactItems"]:
                kind, body = next(iter(entry.items()))
                key = self._key(body["Item"]) if kind == "Put" else body["Key"]
                sizes.append(item_bytes(self._get(body["TableName"], key)))
            return sizes
        if operation == "BatchWriteItem":
            sizes = []
            for table, requests in params["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        key = self._key(request["PutRequest"]["Item"])
                    else:
                        key = request["DeleteRequest"]["Key"]
                    sizes.append(item_bytes(self._get(table, key)))
            return sizes
        return []

    def _after(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if self.paused or self._busy or model.service_model.service_name != "dynamodb":
            return
        with self.excluded.section():
            params = context.get("cost_params")
            if params is not None:
                self._bill(model.name, params, context.get("cost_before", []), parsed)

    def _bill(  # noqa: PLR0912 - one branch an operation
        self, operation: str, params: dict[str, Any], before: list[int], parsed: dict[str, Any]
    ) -> None:
        usage = self.usage
        if operation == "GetItem":
            size = item_bytes(self._get(params["TableName"], params["Key"]))
            usage.rru += read_units(size, consistent=bool(params.get("ConsistentRead")))
        elif operation == "BatchGetItem":
            for table, request in params["RequestItems"].items():
                for key in request["Keys"]:
                    size = item_bytes(self._get(table, key))
                    usage.rru += read_units(size, consistent=bool(request.get("ConsistentRead")))
        elif operation == "TransactGetItems":
            for entry in params["TransactItems"]:
                body = entry["Get"]
                size = item_bytes(self._get(body["TableName"], body["Key"]))
                usage.rru += read_units(size, consistent=True, transactional=True)
        elif operation in ("Query", "Scan"):
            whole = not (
                {
                    "ProjectionExpression",
                    "FilterExpression",
                    "AttributesToGet",
                    "QueryFilter",
                    "ScanFilter",
                    "Select",
                }
                & params.keys()
            )
            if whole and "Items" in parsed:
                size = sum(item_bytes(item) for item in parsed["Items"])
            else:
                size = self._query_bytes(operation, params)
            usage.rru += read_units(size, consistent=bool(params.get("ConsistentRead")))
        elif operation == "PutItem":
            size = item_bytes(params["Item"])
            usage.written_items.append(size)
            usage.wru += write_units(max(size, *before))
        elif operation == "UpdateItem":
            after = item_bytes(self._get(params["TableName"], params["Key"]))
            usage.wru += write_units(max(after, *before))
        elif operation == "DeleteItem":
            usage.wru += write_units(max(0, *before))
        elif operation == "BatchWriteItem":
            requests = [r for rs in params["RequestItems"].values() for r in rs]
            for request, old in zip(requests, before, strict=True):
                new = item_bytes(request.get("PutRequest", {}).get("Item"))
                usage.wru += write_units(max(new, old))
        elif operation == "TransactWriteItems":
            for entry, old in zip(params["TransactItems"], before, strict=True):
                kind, body = next(iter(entry.items()))
                if kind == "Put":
                    new = item_bytes(body["Item"])
                    usage.written_items.append(new)
                elif kind == "Update":
                    new = item_bytes(self._get(body["TableName"], body["Key"]))
                else:  # Delete, or a ConditionCheck (billed as a write of the item checked)
                    new = 0
                usage.wru += write_units(max(new, old), transactional=True)


# ---- the measured run ------------------------------------------------------------------------


@dataclass
class Sample:
    """One request as measured: own CPU, the remote calls it made, what it logged."""

    cpu_s: float
    usage: Usage
    log_bytes: int
    embedded_texts: list[str]
    opensearch_requests: int
    model_calls: Counter[str]


@dataclass
class Measured:
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    transitions: list[int] = field(default_factory=list)  # Standard: states entered per run
    profile_rebuilds: int = 0
    pipeline_runs: int = 0
    memory_item_bytes: float = 0.0
    message_item_bytes: float = 0.0
    vectors_per_memory: dict[int, int] = field(default_factory=dict)

    def add(self, kind: str, sample: Sample) -> None:
        self.samples.setdefault(kind, []).append(sample)


class CountingEmbedder:
    """The hashing embedder at Titan's dimensions; records what would be sent to Titan and
    keeps its own CPU out of the function's (Titan is a remote call)."""

    def __init__(self, inner: Any, excluded: Excluded) -> None:
        self._inner = inner
        self._excluded = excluded
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        with self._excluded.section():
            self.texts.extend(texts)
            return self._inner.embed(texts)


def _counting_model(model: Any, calls: Counter[str]) -> Any:
    """The offline model, each call counted by kind (each stands for one Claude call)."""
    for name in ("reply", "summarize", "extract", "route", "write_uses"):
        original = getattr(model, name)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _original(*args, **kwargs)

        setattr(model, name, counted)
    return model


def _quick_transactions() -> contextlib.ExitStack:
    """moto backs up a whole table (a deep copy) for every item of a TransactWriteItems,
    which makes a table of 150 memories crawl. The backup it restores on failure is kept,
    only cheaper: the item map and each item's attribute map are copied, not every value.
    Nothing measured changes (moto's time is excluded); the run gets minutes shorter."""
    import types  # noqa: PLC0415
    from collections import defaultdict  # noqa: PLC0415
    from unittest import mock  # noqa: PLC0415

    from moto.dynamodb import models  # noqa: PLC0415
    from moto.dynamodb.models.dynamo_type import LimitedSizeDict  # noqa: PLC0415
    from moto.dynamodb.models.table import Table  # noqa: PLC0415

    def item_copy(item: Any) -> Any:
        twin = copy.copy(item)
        twin.attrs = copy.copy(item.attrs)
        return twin

    def deepcopy(value: Any, memo: Any = None) -> Any:
        if not isinstance(value, Table):
            return copy.deepcopy(value, memo)
        clone = copy.copy(value)
        clone.items = defaultdict(dict)
        for hash_value, entry in value.items.items():
            clone.items[hash_value] = (
                {r: item_copy(i) for r, i in entry.items()}
                if isinstance(entry, dict)
                else item_copy(entry)
            )
        return clone

    shim = types.SimpleNamespace(deepcopy=deepcopy, copy=copy.copy)
    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(models, "copy", shim))
    # Each attribute set re-sizes the whole item against the 400 KB limit (quadratic in
    # the attributes); these items are a few KB, so the check is skipped.
    stack.enter_context(mock.patch.object(LimitedSizeDict, "__setitem__", dict.__setitem__))
    return stack


def _shipped_definition(name: str, logical_id: str) -> str:
    from tests.support.template import resource_properties  # noqa: PLC0415

    machine = resource_properties(logical_id)
    text = str((ROOT / machine["DefinitionUri"]).read_text())
    for key, value in machine["DefinitionSubstitutions"].items():
        function = value["Fn::GetAtt"][0]
        text = text.replace(
            "${" + key + "}", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function}"
        )
    return text


def walk_write_pipeline(results: dict[str, dict[str, Any]]) -> list[str]:
    """The states a Standard execution of the shipped write pipeline enters, given each
    task's result (its Lambda payload): the ASL's Choice rules evaluated on them."""
    definition = json.loads((ROOT / "statemachines" / "write_pipeline.asl.json").read_text())
    document: dict[str, Any] = {}
    entered: list[str] = []
    name: str | None = definition["StartAt"]
    while name is not None:
        state = definition["States"][name]
        entered.append(name)
        if state["Type"] == "Task":
            payload = results.get(name, {})
            selector = state.get("ResultSelector", {})
            selected = {
                k.removesuffix(".$"): payload.get(v.split(".")[-1]) for k, v in selector.items()
            }
            path = state.get("ResultPath")
            if path:
                document[path.removeprefix("$.")] = selected
            name = state.get("Next")
        elif state["Type"] == "Choice":
            name = next(
                (rule["Next"] for rule in state["Choices"] if _choice(rule, document)),
                state.get("Default"),
            )
        else:
            name = None
    return entered


def _choice(rule: dict[str, Any], document: dict[str, Any]) -> bool:
    if "Or" in rule:
        return any(_choice(part, document) for part in rule["Or"])
    value: Any = document
    for part in rule["Variable"].removeprefix("$.").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if "NumericGreaterThan" in rule:
        return isinstance(value, int | float) and value > rule["NumericGreaterThan"]
    if "BooleanEquals" in rule:
        return bool(value is rule["BooleanEquals"])
    raise ValueError(f"the walker does not know this rule: {rule}")


def measure() -> Measured:  # noqa: PLR0912, PLR0915 - one scripted day, in order
    """Run one user's scripted day through the handlers on moto; every request measured."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "POWERTOOLS_SERVICE_NAME": "chatmemory",
        "POWERTOOLS_METRICS_NAMESPACE": "chatmemory",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }.items():
        os.environ[name] = value
    os.environ.pop("AWS_PROFILE", None)

    import boto3  # noqa: PLC0415
    import botocore.session  # noqa: PLC0415
    from moto import mock_aws  # noqa: PLC0415
    from moto.core.botocore_stubber import BotocoreStubber  # noqa: PLC0415

    from chatmemory.adapters.clock import ManualClock  # noqa: PLC0415
    from chatmemory.adapters.hashing_embedder import HashingEmbedder  # noqa: PLC0415
    from chatmemory.adapters.offline_model import OfflineModel  # noqa: PLC0415
    from chatmemory.adapters.opensearch_index import OpenSearchIndex  # noqa: PLC0415
    from chatmemory.config import Settings, use_container  # noqa: PLC0415
    from chatmemory.services.indexing import MemoryIndexer  # noqa: PLC0415
    from chatmemory.services.memories import NewMemory  # noqa: PLC0415
    from tests.support.functions import Wired, invoke, load_handler, sample_event  # noqa: PLC0415
    from tests.support.opensearch_fake import FakeCollection  # noqa: PLC0415
    from tests.support.template import create_table_from_template  # noqa: PLC0415

    excluded = Excluded()
    meter = Meter(excluded, ("pk", "sk"))
    measured = Measured()

    stubbed = BotocoreStubber.process_request
    created = botocore.session.Session.create_client

    def create_client(self: Any, *args: Any, **kwargs: Any) -> Any:
        client = created(self, *args, **kwargs)
        meter.attach(client)
        return client

    fake_handle = FakeCollection.handle
    with (
        mock_aws(),
        _quick_transactions(),
        contextlib.ExitStack() as patches,
        tempfile.TemporaryDirectory() as folder,
    ):
        patches.callback(setattr, BotocoreStubber, "process_request", stubbed)
        BotocoreStubber.process_request = excluded.wrap(stubbed)  # type: ignore[method-assign]
        patches.callback(setattr, botocore.session.Session, "create_client", created)
        botocore.session.Session.create_client = create_client  # type: ignore[method-assign]
        patches.callback(setattr, FakeCollection, "handle", fake_handle)
        FakeCollection.handle = excluded.wrap(fake_handle)  # type: ignore[method-assign]

        dynamodb = boto3.client("dynamodb", region_name=REGION)
        create_table_from_template(dynamodb, TABLE)
        sqs = boto3.client("sqs", region_name=REGION)
        fold_queue = sqs.create_queue(QueueName="fold")["QueueUrl"]
        idle_queue = sqs.create_queue(QueueName="idle")["QueueUrl"]
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(
            name="write-pipeline",
            definition=_shipped_definition("write-pipeline", "WritePipeline"),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/write-pipeline",
            type="EXPRESS",
        )["stateMachineArn"]

        # The memories are written two months before the day measured: the write filter
        # caps what a day may add, and the seeding must not use the day's allowance.
        clock = ManualClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC) - SEEDED_BEFORE)
        settings = Settings(
            state_dir=Path(folder),
            store="dynamodb",
            table_name=TABLE,
            region=REGION,
            embedder="hashing",
            model="offline",
            jobs="sqs",
            fold_queue_url=fold_queue,
            idle_queue_url=idle_queue,
            pipeline="stepfunctions",
            write_pipeline_arn=machine,
        )
        model_calls: Counter[str] = Counter()
        container = Wired(settings, clock, _counting_model(OfflineModel(), model_calls))
        embedder = CountingEmbedder(HashingEmbedder(TITAN_DIMENSIONS), excluded)
        container._embedder = embedder  # type: ignore[assignment]  # as _build_embedder would
        collection = FakeCollection(refresh_on_write=True)
        index = OpenSearchIndex(
            client=collection.client(),
            index_name=f"memories-{embedder.name}",
            dimensions=embedder.dimensions,
            clock=clock,
            encoding=VectorEncoding(VECTOR_ENCODING),
        )
        index.ensure_index()
        container.__dict__["index"] = index
        use_container(container)
        for dims in (1024, 512, 256):
            stub = HashingEmbedder(dims)
            measured.vectors_per_memory[dims] = 1 + MemoryIndexer(stub, index).max_uses

        handlers = {
            name: load_handler(folder_name)
            for name, folder_name in {
                "chat": "chat",
                "memories": "memories",
                "fold": "fold",
                "idle": "pipeline/idle",
                "extract": "pipeline/extract",
                "route": "pipeline/route",
                "rebuild_profile": "pipeline/rebuild_profile",
                "notify": "pipeline/notify",
            }.items()
        }
        sqs_template = sample_event("fold", "fold_job")

        def sqs_event(body: dict[str, Any]) -> dict[str, Any]:
            event = copy.deepcopy(sqs_template)
            event["Records"][0]["body"] = json.dumps(body)
            return event

        log_buffer = io.StringIO()
        for handler in logging.getLogger("chatmemory").handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.setStream(log_buffer)

        def run(kind: str | None, call: Callable[[], Any]) -> Any:
            """Call a handler; record a Sample under `kind` (None: a warm-up)."""
            embedder.texts = []
            model_calls.clear()
            requests_before = len(collection.requests)
            log_buffer.seek(0)
            log_buffer.truncate()
            with meter.request() as usage, contextlib.redirect_stdout(log_buffer):
                meter.paused = False
                cpu, ex = time.process_time(), excluded.cpu
                try:
                    result = call()
                finally:
                    own = (time.process_time() - cpu) - (excluded.cpu - ex)
                    meter.paused = True
            if kind is not None:
                measured.add(
                    kind,
                    Sample(
                        cpu_s=own,
                        usage=usage,
                        log_bytes=len(log_buffer.getvalue().encode()),
                        embedded_texts=list(embedder.texts),
                        opensearch_requests=len(collection.requests) - requests_before,
                        model_calls=Counter(model_calls),
                    ),
                )
            return result

        # 1. The user's memories, as seed 002 sizes them (not measured).
        data = ROOT / "bench" / "data"
        rows = [
            json.loads(line)
            for line in (data / "retrieval_memories.jsonl").read_text().splitlines()
        ]
        hints = {
            row["id"]: row
            for row in map(
                json.loads, (data / "retrieval_memory_hints.jsonl").read_text().splitlines()
            )
        }
        # The cap check after each write reads every row (150 x 150 reads under moto);
        # 150 is far below the cap, so seeding skips it.
        container.memories._guard_cap = lambda user_id: None  # type: ignore[method-assign]
        # Memories about other things than the script's facts, so the write pipeline has
        # something new to learn (as seed 002's extractor budget assumes).
        others = [row for row in rows if row["category"] not in SCRIPT_CATEGORIES]
        for row in others[: int(SEED["memories_per_user"])]:
            container.memories.create(
                USER,
                NewMemory(
                    text=row["text"], category=row["category"], uses=tuple(hints[row["id"]]["uses"])
                ),
            )
        del container.memories._guard_cap
        clock.advance(SEEDED_BEFORE)
        print(f"memories seeded ({time.perf_counter() - STARTED:.0f} s)", file=sys.stderr)
        meter.start(boto3.client("dynamodb", region_name=REGION))
        meter.paused = True  # metered only inside run()

        # 2. A day of turns in two conversations (seed 002: 15 turns, 1.5 sessions).
        chat_event = sample_event("chat", "chat")
        conversations: list[str] = []
        warmed: set[str] = set()

        def step(kind: str | None, name: str, event: dict[str, Any]) -> Any:
            """A task or queue handler called as Lambda would (an event and a context)."""
            return run(kind, functools.partial(handlers[name], event, _context(name)))

        def chat(kind: str | None, message: str, conversation: str | None) -> str:
            body: dict[str, Any] = {"message": message}
            if conversation:
                body["conversation_id"] = conversation
            reply = run(
                kind, functools.partial(invoke, handlers["chat"], chat_event, user=USER, body=body)
            )
            assert reply.status == 200, reply.body
            return str(reply.body["conversation_id"])

        def once(kind: str) -> str | None:
            """The first call of each handler is its warm-up (imports, clients): unmeasured."""
            if kind in warmed:
                return kind
            warmed.add(kind)
            return None

        for session in range(2):
            conversation: str | None = None
            for message in MESSAGES if session == 0 else MESSAGES[:12]:
                conversation = chat(once("chat_turn"), message, conversation)
                clock.advance(timedelta(minutes=1))
            assert conversation is not None
            conversations.append(conversation)
            # the fold jobs this conversation queued
            while True:
                received = sqs.receive_message(QueueUrl=fold_queue, MaxNumberOfMessages=10)
                messages = received.get("Messages", [])
                if not messages:
                    break
                for message_ in messages:
                    step(once("fold"), "fold", sqs_event(json.loads(message_["Body"])))
                    sqs.delete_message(QueueUrl=fold_queue, ReceiptHandle=message_["ReceiptHandle"])
            check = sqs_event({"user_id": USER, "conversation_id": conversation})
            step(once("idle_check"), "idle", check)  # still busy: most checks end here
            clock.advance(timedelta(minutes=15))
            step("idle_start", "idle", check)  # the burst's last check starts the pipeline
            # 3. The write pipeline's steps, as the state machine would call them.
            stored = container.stores.conversations.get_conversation(USER, conversation)
            assert stored is not None
            task = {"user_id": USER, "conversation_id": conversation, "upto_seq": stored.last_seq}
            results: dict[str, dict[str, Any]] = {"Extract": step("extract", "extract", task)}
            ids = {"user_id": USER, "run_id": results["Extract"]["run_id"]}
            if results["Extract"]["candidates"] or results["Extract"]["reports"]:
                results["Route"] = step("route", "route", ids)
                if results["Route"]["profile_affected"]:
                    persona = {"user_id": USER, "persona": results["Route"]["persona"]}
                    results["RebuildProfile"] = step("rebuild_profile", "rebuild_profile", persona)
                    measured.profile_rebuilds += 1
                results["Notify"] = step("notify", "notify", ids)
            measured.transitions.append(len(walk_write_pipeline(results)))
            measured.pipeline_runs += 1
            clock.advance(timedelta(hours=3))

        print(
            f"turns, folds and pipeline runs measured ({time.perf_counter() - STARTED:.0f} s)",
            file=sys.stderr,
        )
        # 4. The other read routes.
        context_event = sample_event("chat", "context")
        list_event = sample_event("memories", "list_memories")
        for _ in range(4):
            run(
                once("context"),
                functools.partial(invoke, handlers["chat"], context_event, user=USER),
            )
            run(
                once("list_memories"),
                functools.partial(invoke, handlers["memories"], list_event, user=USER),
            )
        use_container(None)

        items = dynamodb.scan(TableName=TABLE)["Items"]  # one user: one page
        sort_keys = [(item["sk"]["S"], item) for item in items]
        memory_rows = [i for sk, i in sort_keys if sk.startswith("MEM#") and sk.count("#") == 1]
        message_rows = [i for sk, i in sort_keys if sk.startswith("MSG#")]
        measured.memory_item_bytes = statistics.fmean(map(item_bytes, memory_rows))
        measured.message_item_bytes = statistics.fmean(map(item_bytes, message_rows))
    return measured


def _context(name: str) -> Any:
    from chatmemory.local.server import LocalLambdaContext  # noqa: PLC0415

    return LocalLambdaContext(function_name=name, deadline=time.monotonic() + 300)


# ---- from measurements to money -----------------------------------------------------------


def p(name: str) -> float:
    return PRICES[name].value


def a(name: str) -> float:
    return ASSUMPTIONS[name].value


def model_wait_s(calls: Counter[str]) -> float:
    """Seconds the function waits on Claude for these calls (time to the last token)."""
    output = {
        "reply": SEED["reply_tokens"],
        "summarize": SEED["fold_out"],
        "extract": SEED["extract_out"],
        "route": ROUTE_OUT_TOKENS,
        "write_uses": ROUTE_OUT_TOKENS,
    }
    return sum(
        n * (a("model_ttft_s") + output[name] / a("model_tokens_per_s"))
        for name, n in calls.items()
    )


@dataclass(frozen=True)
class PerRequest:
    """One kind of request, averaged over its samples, as Lambda would bill it."""

    kind: str
    samples: int
    cpu_ms: float  # measured here, our code only
    lambda_s: float  # estimated billed duration at 512 MB
    rru: float
    wru: float
    dynamodb_calls: float
    sqs_calls: float
    sfn_calls: float
    opensearch_calls: float
    embed_tokens: float
    log_bytes: float
    model_wait_s: float

    @property
    def gb_s(self) -> float:
        return self.lambda_s * a("lambda_memory_mb") / 1024


def per_request(kind: str, samples: list[Sample]) -> PerRequest:
    from chatmemory.domain.tokens import estimate_tokens  # noqa: PLC0415

    def mean(values: Iterator[float]) -> float:
        return statistics.fmean(values)

    cpu_share = a("lambda_memory_mb") / a("lambda_mb_per_vcpu")
    cpu = statistics.median(s.cpu_s for s in samples)
    dynamo = mean(s.usage.count("dynamodb") for s in samples)
    sqs = mean(s.usage.count("sqs") for s in samples)
    sfn = mean(s.usage.count("stepfunctions") for s in samples)
    search = mean(s.opensearch_requests for s in samples)
    embeds = mean(float(bool(s.embedded_texts)) for s in samples)
    wait = mean(model_wait_s(s.model_calls) for s in samples)
    duration = (
        cpu / cpu_share
        + dynamo * a("dynamodb_call_s")
        + (sqs + sfn) * a("aws_call_s")
        + search * a("opensearch_call_s")
        + embeds * a("embed_call_s")
        + wait
    )
    return PerRequest(
        kind=kind,
        samples=len(samples),
        cpu_ms=cpu * 1000,
        lambda_s=duration,
        rru=mean(s.usage.rru for s in samples),
        wru=mean(s.usage.wru for s in samples),
        dynamodb_calls=dynamo,
        sqs_calls=sqs,
        sfn_calls=sfn,
        opensearch_calls=search,
        embed_tokens=mean(sum(estimate_tokens(t) for t in s.embedded_texts) for s in samples),
        log_bytes=mean(s.log_bytes for s in samples) + a("lambda_platform_log_bytes"),
        model_wait_s=wait,
    )


def daily_requests(measured: Measured) -> dict[str, float]:
    """How many of each request a day brings at seed 002's traffic."""
    runs = max(1, measured.pipeline_runs)
    routed = len(measured.samples.get("route", [])) / runs
    rebuilt = measured.profile_rebuilds / runs
    return {
        "chat_turn": TURNS_DAY,
        "list_memories": SESSIONS_DAY * a("list_memories_per_session"),
        # one idle check per user message; one a session starts the pipeline
        "idle_check": TURNS_DAY - SESSIONS_DAY,
        "idle_start": SESSIONS_DAY,
        "extract": SESSIONS_DAY,
        "route": SESSIONS_DAY * routed,
        "rebuild_profile": SESSIONS_DAY * rebuilt,
        "notify": SESSIONS_DAY * routed,
        "fold": FOLDS_DAY,
        "context": 0.0,  # integrators' own-model route; not part of seed 002's traffic
    }


@dataclass(frozen=True)
class Line:
    """One cost line: USD a month, and whether it is memory work (vs the chat itself)."""

    component: str
    monthly: float
    memory: bool
    how: str


def claude_costs(prices: str) -> dict[str, float]:
    """USD a day for the chat turns (three caching cases) and the memory work, from seed
    002's token counts. `prices`: "seed" or "published"."""
    s = SEED
    if prices == "seed":
        chat_in, chat_out = p("seed_chat_input_token"), p("seed_chat_output_token")
        small_in, small_out = p("seed_small_input_token"), p("seed_small_output_token")
    else:
        chat_in, chat_out = p("sonnet_5_5_input_token"), p("sonnet_5_5_output_token")
        small_in, small_out = p("haiku_5_5_input_token"), p("haiku_5_5_output_token")
    write, read = p("cache_write_5m_multiple"), p("cache_read_multiple")
    prompt = (
        s["system_tokens"]
        + s["profile_tokens"]
        + s["memories_tokens"]
        + s["summary_tokens"]
        + s["window_turns"] * s["turn_tokens"]
        + s["message_tokens"]
    )
    output = s["reply_tokens"] * chat_out
    session_start = s["sessions_per_user_day"] / s["turns_per_user_day"]  # cache expired
    # (a) system + profile cached (900 tokens); the first turn of a session writes it.
    stable = s["system_tokens"] + s["profile_tokens"]
    stable_cost = stable * chat_in * (session_start * write + (1 - session_start) * read)
    cached_prefix = (prompt - stable) * chat_in + stable_cost + output
    # (b) the code's breakpoints: system | profile + summary | the last recent turn. A turn
    # reads the previous turn's prefix and writes the exchange since; after a fold (the
    # summary changed) or a session's first turn it writes the whole prefix again.
    head = s["system_tokens"] + s["profile_tokens"] + s["summary_tokens"]
    window = s["window_turns"] * s["turn_tokens"]
    tail = s["memories_tokens"] + s["message_tokens"]
    rewrite = 1 - (1 - 1 / s["turns_per_fold"]) * (1 - session_start)
    warm = (head + window - s["turn_tokens"]) * read + s["turn_tokens"] * write
    cold = (head + window) * write
    breakpoints = (tail + rewrite * cold + (1 - rewrite) * warm) * chat_in + output
    extraction = s["extract_in"] * small_in + s["extract_out"] * small_out
    fold = s["fold_in"] * small_in + s["fold_out"] * small_out
    return {
        "turn_uncached": TURNS_DAY * (prompt * chat_in + output),
        "turn_prefix": TURNS_DAY * cached_prefix,
        "turn_breakpoints": TURNS_DAY * breakpoints,
        "extraction": SESSIONS_DAY * extraction,
        "fold": FOLDS_DAY * fold,
        "prompt_tokens": float(prompt),
        "rewrite_share": rewrite,
    }


@dataclass(frozen=True)
class VectorCase:
    label: str
    vectors: float
    dimensions: int
    bytes_per_dim: int

    @property
    def graph_bytes(self) -> float:
        factor = a(
            {4: "hnsw_bytes_fp32", 2: "hnsw_bytes_fp16", 1: "hnsw_bytes_byte"}[self.bytes_per_dim]
        )
        return factor * (self.bytes_per_dim * self.dimensions + 8 * a("hnsw_m")) * self.vectors

    def ocus(self, standby: bool) -> tuple[float, float]:
        """(indexing, search) OCUs: search holds the graphs in RAM (x2 with standby)."""
        per_ocu = a("ocu_ram_gib") * 2**30 * a("ocu_graph_share")
        minimum = a("ocu_min_standby") if standby else a("ocu_min_standby") / 2
        search = max(minimum, math.ceil(self.graph_bytes / per_ocu) * (2 if standby else 1))
        return minimum, search

    def monthly(self, standby: bool) -> float:
        indexing, search = self.ocus(standby)
        compute = (indexing + search) * 24 * DAYS * p("opensearch_ocu_hour")
        stored = self.vectors * (self.bytes_per_dim * self.dimensions + 100) / 1e9
        return compute + stored * p("opensearch_storage_gb_month")


def vector_cases(measured: Measured) -> list[VectorCase]:
    memories = SEED["registered_users"] * SEED["memories_per_user"]
    per_1024 = measured.vectors_per_memory[1024]
    per_512 = measured.vectors_per_memory[512]
    return [
        VectorCase("one vector a memory, 1,024 dims float32 (the brief's 150M)", memories, 1024, 4),
        VectorCase("one vector a memory, 512 dims fp16", memories, 512, 2),
        VectorCase(
            f"as indexed before: {per_1024} a memory (text + uses), 1,024 float32",
            memories * per_1024,
            1024,
            4,
        ),
        VectorCase(
            f"as deployed: {per_512} a memory (text + uses), 512 dims fp16",
            memories * per_512,
            512,
            2,
        ),
        VectorCase(f"512 dims byte: {per_512} a memory", memories * per_512, 512, 1),
    ]


def deployed_case(cases: list[VectorCase]) -> VectorCase:
    """The case of the stack's default size and encoding."""
    width = VectorEncoding(VECTOR_ENCODING).bytes_per_dimension
    return next(
        c
        for c in cases
        if c.label.startswith("as ")
        and (c.dimensions, c.bytes_per_dim) == (TITAN_DIMENSIONS, width)
    )


def cost_lines(
    measured: Measured, rows: dict[str, PerRequest]
) -> tuple[list[Line], dict[str, Any]]:
    daily = daily_requests(measured)
    month = {kind: n * DAYS for kind, n in daily.items()}
    memory_kinds = {
        "idle_check",
        "idle_start",
        "extract",
        "route",
        "rebuild_profile",
        "notify",
        "fold",
    }
    lines: list[Line] = []

    def lambda_cost(kinds: set[str]) -> float:
        return sum(
            month[k] * (rows[k].gb_s * p("lambda_gb_second_arm") + p("lambda_request"))
            for k in kinds
            if k in rows
        )

    chat_kinds = {"chat_turn", "list_memories"}
    lines.append(
        Line(
            "Lambda: chat turns and memory list",
            lambda_cost(chat_kinds),
            False,
            "GB-s from measured CPU + waits (model: time to last token), 512 MB arm64",
        )
    )
    lines.append(
        Line(
            "Lambda: idle checks, write pipeline, folds",
            lambda_cost(memory_kinds),
            True,
            "same method; one idle check per user message",
        )
    )

    def units(kinds: set[str], unit: str) -> float:
        return float(sum(month[k] * getattr(rows[k], unit) for k in kinds if k in rows))

    lines.append(
        Line(
            "DynamoDB reads and writes: chat",
            units(chat_kinds, "rru") * p("dynamodb_rru")
            + units(chat_kinds, "wru") * p("dynamodb_wru"),
            False,
            "units summed from item sizes on a moto table built from template.yaml",
        )
    )
    lines.append(
        Line(
            "DynamoDB reads and writes: memory work",
            units(memory_kinds, "rru") * p("dynamodb_rru")
            + units(memory_kinds, "wru") * p("dynamodb_wru"),
            True,
            "same method",
        )
    )
    memory_gb = (
        SEED["registered_users"]
        * SEED["memories_per_user"]
        * (measured.memory_item_bytes + 100)
        / 1e9
    )
    message_gb = TURNS_DAY * 2 * DAYS * (measured.message_item_bytes + 100) / 1e9
    lines.append(
        Line(
            "DynamoDB storage: memory rows",
            memory_gb * p("dynamodb_storage_gb_month"),
            True,
            f"150M rows x {measured.memory_item_bytes:,.0f} B (+100 B per item)",
        )
    )
    lines.append(
        Line(
            "DynamoDB storage: a month of messages",
            message_gb * p("dynamodb_storage_gb_month"),
            False,
            f"{measured.message_item_bytes:,.0f} B a message; grows every month (kept)",
        )
    )
    cases = vector_cases(measured)
    lines.append(
        Line(
            "OpenSearch Serverless (as deployed: 512 dims fp16, standby on)",
            deployed_case(cases).monthly(True),
            True,
            "RAM-bound HNSW graphs; see the OCU table",
        )
    )
    titan = sum(month[k] * rows[k].embed_tokens for k in rows if k in month)
    lines.append(
        Line(
            "Bedrock Titan embeddings",
            titan * p("titan_v2_input_token"),
            True,
            "tokens of every text embedded (turn query, memories written)",
        )
    )
    express = express_cost(measured, rows, SESSIONS_DAY * DAYS)
    lines.append(
        Line(
            "Step Functions: write pipeline (Express)", express, True, "requests + duration, 64 MB"
        )
    )
    purges = a("purges_per_active_user_day") * SEED["daily_users"] * DAYS
    lines.append(
        Line(
            "Step Functions: purge (Standard)",
            purges * purge_transitions() * p("sfn_standard_transition"),
            True,
            f"{purge_transitions()} transitions a purge, assumed rate",
        )
    )
    api = (month["chat_turn"] + month["list_memories"]) * p("http_api_request")
    lines.append(
        Line("API Gateway HTTP API", api, False, "one request a turn (JSON chat) and a list")
    )
    log_bytes = sum(month[k] * rows[k].log_bytes for k in rows if k in month)
    lines.append(
        Line(
            "CloudWatch Logs ingestion",
            log_bytes / 1e9 * p("logs_ingest_gb"),
            False,
            "measured log lines + Lambda's platform lines",
        )
    )
    # each message sent is received and deleted by the consumer's poller
    sqs = sum(month[k] * rows[k].sqs_calls for k in rows if k in month) * 3
    lines.append(Line("SQS", sqs * p("sqs_request"), True, "send + receive + delete per message"))
    claude = claude_costs("seed")
    lines.append(
        Line(
            "Claude: chat turns (seed prices, code's cache breakpoints)",
            claude["turn_breakpoints"] * DAYS,
            False,
            "seed 002 tokens; cache write 1.25x, read 0.1x input",
        )
    )
    lines.append(
        Line(
            "Claude: extraction (seed prices)",
            claude["extraction"] * DAYS,
            True,
            "seed 002: 4,300 in, 150 out",
        )
    )
    lines.append(
        Line(
            "Claude: folds (seed prices)",
            claude["fold"] * DAYS,
            True,
            "seed 002: 2,000 in, 400 out",
        )
    )
    extra = {"daily": daily, "cases": cases, "claude": claude}
    return lines, extra


def purge_transitions() -> int:
    """States a Standard purge run enters with something to purge: one profile and one
    summary to rewrite (one iteration of each Map)."""
    definition = json.loads((ROOT / "statemachines" / "purge.asl.json").read_text())
    entered, name = 0, definition["StartAt"]
    while name:
        state = definition["States"][name]
        entered += 1
        if state["Type"] == "Map":
            inner = state.get("ItemProcessor") or state.get("Iterator") or {}
            entered += len(inner.get("States", {}))
        name = state["Choices"][0]["Next"] if state["Type"] == "Choice" else state.get("Next")
    return entered


def express_cost(measured: Measured, rows: dict[str, PerRequest], runs: float) -> float:
    duration = express_duration_s(measured, rows)
    billed = math.ceil(duration * 10) / 10
    return runs * (p("sfn_express_request") + billed * (64 / 1024) * p("sfn_express_gb_second"))


def express_duration_s(measured: Measured, rows: dict[str, PerRequest]) -> float:
    """A run's duration: its tasks' Lambda durations, each weighted by how often it runs."""
    runs = max(1, measured.pipeline_runs)
    total = 0.0
    for kind in ("extract", "route", "rebuild_profile", "notify"):
        if kind in rows:
            total += rows[kind].lambda_s * len(measured.samples[kind]) / runs
    return total


def standard_cost(measured: Measured, runs: float) -> float:
    transitions = statistics.fmean(measured.transitions) if measured.transitions else 0.0
    return runs * transitions * p("sfn_standard_transition")


# ---- output -----------------------------------------------------------------------------------


def usd(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) < 0.01:
        return f"{value:.6f}"
    return f"{value:,.2f}"


def report(measured: Measured) -> None:  # noqa: PLR0915 - one table after another
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    console = Console(width=160)
    rows = {kind: per_request(kind, samples) for kind, samples in measured.samples.items()}
    lines, extra = cost_lines(measured, rows)
    turns_month = TURNS_DAY * DAYS
    actives, registered = SEED["daily_users"], SEED["registered_users"]

    measured_table = Table(title="Measured per request (handlers in-process; CPU is our code only)")
    for column in (
        "request",
        "n",
        "CPU ms",
        "Lambda s",
        "GB-s",
        "RRU",
        "WRU",
        "DynamoDB calls",
        "OpenSearch",
        "embed tokens",
        "log bytes",
    ):
        measured_table.add_column(column, justify="right" if column != "request" else "left")
    for row in rows.values():
        measured_table.add_row(
            row.kind,
            str(row.samples),
            f"{row.cpu_ms:.1f}",
            f"{row.lambda_s:.2f}",
            f"{row.gb_s:.3f}",
            f"{row.rru:.1f}",
            f"{row.wru:.1f}",
            f"{row.dynamodb_calls:.1f}",
            f"{row.opensearch_calls:.1f}",
            f"{row.embed_tokens:.0f}",
            f"{row.log_bytes:.0f}",
        )
    console.print(measured_table)
    console.print(
        "Lambda s = CPU ÷ (512/1,769 of a vCPU) + waits (DynamoDB, SQS, Step Functions, "
        "OpenSearch, Titan, the model's time to its last token). RRU/WRU: on-demand units "
        "from the sizes of the items each request reads and writes. A chat turn reads the "
        "memories in use and never their history (README: Per-turn reads), so its RRU stays "
        "flat as history grows."
    )

    total = Table(
        title=f"Monthly cost at seed 002's traffic ({TURNS_DAY:,.0f} turns a day, {DAYS}-day month)"
    )
    for column in (
        "component",
        "per turn",
        "per daily user / month",
        "per registered user / month",
        "month",
        "memory work",
        "how",
    ):
        total.add_column(column, justify="left" if column in ("component", "how") else "right")
    for line in lines:
        total.add_row(
            line.component,
            usd(line.monthly / turns_month),
            usd(line.monthly / actives),
            usd(line.monthly / registered),
            usd(line.monthly),
            "yes" if line.memory else "",
            line.how,
        )
    grand = sum(line.monthly for line in lines)
    total.add_row(
        "total",
        usd(grand / turns_month),
        usd(grand / actives),
        usd(grand / registered),
        usd(grand),
        "",
        "",
        style="bold",
    )
    console.print(total)

    claude = extra["claude"]
    chat_lines = [line for line in lines if line.component.startswith("Claude: chat")]
    memory_model = (claude["extraction"] + claude["fold"]) * DAYS
    memory_all = sum(line.monthly for line in lines if line.memory)
    share = Table(title="Memory work as a share of generation cost (seed 002 estimates 4.5 %)")
    for column in (
        "chat generation counted as",
        "chat USD / month",
        "memory model calls",
        "+ memory infrastructure",
    ):
        share.add_column(
            column, justify="left" if column.startswith("chat generation") else "right"
        )
    for label, chat in (
        ("no prompt caching (seed 002's own sum)", claude["turn_uncached"] * DAYS),
        ("system + profile cached (900 tokens)", claude["turn_prefix"] * DAYS),
        ("the code's cache breakpoints", chat_lines[0].monthly),
    ):
        share.add_row(label, usd(chat), f"{memory_model / chat:.1%}", f"{memory_all / chat:.1%}")
    console.print(share)
    published = claude_costs("published")
    console.print(
        f"At the configured models' published prices (Sonnet 5.5 $2/$10, Haiku 5.5 "
        f"$0.10/$0.50 per M tokens) the chat turns cost {usd(published['turn_breakpoints'] * DAYS)} "
        f"a month with the code's breakpoints ({usd(published['turn_uncached'] * DAYS)} uncached) "
        f"and memory model calls {usd((published['extraction'] + published['fold']) * DAYS)}: "
        f"{(published['extraction'] + published['fold']) / published['turn_breakpoints']:.1%} of chat. "
        f"The 900-token system + profile prefix is below the {a('cache_min_tokens'):,.0f}-token "
        "minimum the cache keeps (ASSUMPTIONS), so alone it would not be cached at all; the "
        "code's second breakpoint (profile + summary, 1,300 tokens) is."
    )

    ocu = Table(
        title=f"OpenSearch Serverless: OCUs for {SEED['registered_users'] * SEED['memories_per_user'] / 1e6:,.0f}M memories "
        f"(QPS {SEED['mean_qps']} mean, {SEED['peak_qps']} peak)"
    )
    for column in (
        "vectors",
        "count",
        "graph RAM GiB",
        "OCUs standby on (idx+search)",
        "USD / month",
        "OCUs standby off",
        "USD / month ",
    ):
        ocu.add_column(column, justify="left" if column == "vectors" else "right")
    for case in extra["cases"]:
        on, off = case.ocus(True), case.ocus(False)
        ocu.add_row(
            case.label,
            f"{case.vectors / 1e6:,.0f}M",
            f"{case.graph_bytes / 2**30:,.0f}",
            f"{on[0]:g} + {on[1]:g}",
            usd(case.monthly(True)),
            f"{off[0]:g} + {off[1]:g}",
            usd(case.monthly(False)),
        )
    minimum = VectorCase("minimum", 0, 1, 4)
    ocu.add_row(
        "an empty collection (the minimum)",
        "0",
        "0",
        f"{minimum.ocus(True)[0]:g} + {minimum.ocus(True)[1]:g}",
        usd(minimum.monthly(True)),
        f"{minimum.ocus(False)[0]:g} + {minimum.ocus(False)[1]:g}",
        usd(minimum.monthly(False)),
    )
    console.print(ocu)
    console.print(
        "Search OCUs hold the HNSW graphs (1.1 x (bytes x dims + 8m) a vector, m = 16) in "
        f"{a('ocu_graph_share'):.0%} of each OCU's {a('ocu_ram_gib'):g} GiB (assumed), doubled with "
        f"standby replicas; at {SEED['peak_qps']} queries/s RAM, not QPS, sets the count "
        "(no published QPS per OCU). Indexing stays at the minimum (~7 writes/s)."
    )

    runs_month = SESSIONS_DAY * DAYS
    flows = Table(title=f"Step Functions for the write pipeline ({SESSIONS_DAY:,.0f} runs a day)")
    for column in ("type", "per run", "states entered", "duration s", "USD / month"):
        flows.add_column(column, justify="left" if column == "type" else "right")
    transitions = statistics.fmean(measured.transitions) if measured.transitions else 0.0
    duration = express_duration_s(measured, rows)
    flows.add_row(
        "Express (template today)",
        usd(express_cost(measured, rows, 1)),
        f"{transitions:.1f}",
        f"{duration:.1f}",
        usd(express_cost(measured, rows, runs_month)),
    )
    flows.add_row(
        "Standard",
        usd(standard_cost(measured, 1)),
        f"{transitions:.1f}",
        f"{duration:.1f}",
        usd(standard_cost(measured, runs_month)),
    )
    purges = a("purges_per_active_user_day") * SEED["daily_users"] * DAYS
    flows.add_row(
        "purge, Standard (template today)",
        usd(purge_transitions() * p("sfn_standard_transition")),
        str(purge_transitions()),
        "",
        usd(purges * purge_transitions() * p("sfn_standard_transition")),
    )
    console.print(flows)

    sources = Table(
        title=f"Prices and figures (read {READ}; update PRICES / ASSUMPTIONS in this file)"
    )
    for column in ("name", "value", "unit", "source", "note"):
        sources.add_column(column, overflow="fold")
    for name, entry in {**PRICES, **ASSUMPTIONS}.items():
        sources.add_row(name, f"{entry.value:g}", entry.unit, entry.source, entry.note)
    console.print(sources)
    console.print(f"measured in {time.perf_counter() - STARTED:.0f} s")


def main() -> None:
    report(measure())


if __name__ == "__main__":
    main()
