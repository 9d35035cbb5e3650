"""Lambda entry point for the table's stream: each new audit event that tells a change
(added, corrected, closed, deleted, purged, restored, a thread's status) goes to the
stack's EventBridge bus as a change event — ids, persona, kind, op, actor and time,
never a memory's words.

The event source's filter hands this function only new audit items (`EVT#…` sort keys)
of those ops; anything else that arrives is skipped (an audit item that cannot be read
too, logged: it would block the shard forever). A record whose publish fails is
reported back alone, and the stream retries from it; consumers keep the first of each
event id, so a retried record published twice changes nothing for them.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from chatmemory.config import container
from chatmemory.tasks.stream import stream_handler
from chatmemory.telemetry import count, logger


def publish_change(record: DynamoDBRecord) -> None:
    """Publish the change a new audit item tells; ChangeFeedUnavailable fails the record."""
    built = container()
    image = record.raw_event.get("dynamodb", {}).get("NewImage") or {}
    try:
        event = built.read_stream_audit_event(image)
    except ValueError as exc:  # a retry reads it no better; holding the shard helps no one
        logger.error("stream record skipped: unreadable", extra={"reason": str(exc)})
        count("ChangeEventsUnreadable")
        return
    if event is None:
        logger.info("stream record skipped: not an audit event")
        return
    published = built.change_publisher.publish([event])
    count("ChangeEventsPublished", published)


lambda_handler = stream_handler(publish_change)
