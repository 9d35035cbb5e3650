"""Change events in tests: the stack's bus under moto with a rule that copies what
arrives into a queue, the table's stream read back as the Lambda event it would feed
ChangesFunction (through the template's own filter), and the local changes.jsonl."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from moto.events.models import EventPattern

from tests.support.template import resource_properties

REGION = "eu-west-1"
BUS = "chatmemory-test-changes"
# The stream's API takes the stream's ARN, and botocore then calls an account-specific
# host moto does not answer; the regional one it does.
STREAMS_ENDPOINT = f"https://streams.dynamodb.{REGION}.amazonaws.com"
EVERY_CHANGE = '{"source": ["chatmemory"]}'


@dataclass
class BusWatch:
    """A bus, and a queue a rule with `pattern` copies each matching event into."""

    bus_name: str
    queue_url: str

    def received(self) -> list[dict[str, Any]]:
        """Every event the rule passed so far (EventBridge's envelopes), oldest id first."""
        sqs = boto3.client("sqs", region_name=REGION)
        envelopes: list[dict[str, Any]] = []
        while True:
            answer = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10)
            messages = answer.get("Messages", [])
            if not messages:
                return sorted(envelopes, key=lambda envelope: envelope["detail"]["id"])
            for message in messages:
                envelopes.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


def watch_bus(pattern: str = EVERY_CHANGE, bus_name: str = BUS, *, create: bool = True) -> BusWatch:
    """The bus (created unless it exists), and a rule of `pattern` into a new queue."""
    events = boto3.client("events", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    if create:
        events.create_event_bus(Name=bus_name)
    name = f"watch-{len(events.list_rules(EventBusName=bus_name)['Rules'])}"
    queue_url = sqs.create_queue(QueueName=f"{bus_name}-{name}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    events.put_rule(Name=name, EventBusName=bus_name, EventPattern=pattern)
    events.put_targets(Rule=name, EventBusName=bus_name, Targets=[{"Id": "q", "Arn": queue_arn}])
    return BusWatch(bus_name, queue_url)


def stream_filter() -> EventPattern:
    """The filter template.yaml puts on ChangesFunction's stream, as Lambda applies it."""
    (event,) = resource_properties("ChangesFunction")["Events"].values()
    (criterion,) = event["Properties"]["FilterCriteria"]["Filters"]
    raw = criterion["Pattern"]
    return EventPattern(raw, json.loads(raw))


def stream_records(table_name: str) -> list[dict[str, Any]]:
    """Every record on the table's stream so far, shaped as Lambda hands them over."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    streams = boto3.client("dynamodbstreams", region_name=REGION, endpoint_url=STREAMS_ENDPOINT)
    arn = dynamodb.describe_table(TableName=table_name)["Table"]["LatestStreamArn"]
    (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records: list[dict[str, Any]] = []
    while iterator:
        answer = streams.get_records(ShardIterator=iterator, Limit=1000)
        if not answer["Records"]:
            break
        for record in answer["Records"]:
            created = record["dynamodb"]["ApproximateCreationDateTime"]
            record["dynamodb"]["ApproximateCreationDateTime"] = created.timestamp()
            record["eventSourceARN"] = arn
            record["awsRegion"] = REGION
            records.append(_as_delivered(record))
        iterator = answer.get("NextShardIterator")
    return records


def _as_delivered(value: Any) -> Any:
    """A record as Lambda's JSON carries it: binary attributes (botocore's bytes) in base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {key: _as_delivered(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_delivered(item) for item in value]
    return value


def lambda_batches(records: list[dict[str, Any]], size: int = 100) -> list[dict[str, Any]]:
    """The records the template's filter lets through, in events of `size` records."""
    passed = [record for record in records if stream_filter().matches_event(record)]
    return [{"Records": passed[at : at + size]} for at in range(0, len(passed), size)]


def changes_in(path: Path) -> list[dict[str, Any]]:
    """Every change in a changes.jsonl, in file order."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
