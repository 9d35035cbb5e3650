"""Reads template.yaml so tests build AWS resources from the deployed definitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chatmemory.local.sam_template import load_template as _load

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


def load_template() -> dict[str, Any]:
    return _load(TEMPLATE)


def resource_properties(logical_id: str) -> dict[str, Any]:
    properties: dict[str, Any] = load_template()["Resources"][logical_id]["Properties"]
    return properties


def create_table_from_template(
    client: Any, table_name: str, logical_id: str = "MemoryTable", *, stream: bool = False
) -> None:
    """Create the table exactly as template.yaml declares it (keys, indexes, TTL, PITR, SSE;
    with `stream`, its stream too: only the change events' tests read it, and moto keeps
    every record of it in memory)."""
    props = resource_properties(logical_id)
    kwargs: dict[str, Any] = {
        "TableName": table_name,
        "BillingMode": props["BillingMode"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
    }
    if "LocalSecondaryIndexes" in props:
        kwargs["LocalSecondaryIndexes"] = props["LocalSecondaryIndexes"]
    if "GlobalSecondaryIndexes" in props:
        kwargs["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    if props.get("SSESpecification", {}).get("SSEEnabled"):
        kwargs["SSESpecification"] = {"Enabled": True}
    if stream:
        view = props["StreamSpecification"]["StreamViewType"]
        kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": view}
    client.create_table(**kwargs)
    ttl = props.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        client.update_time_to_live(
            TableName=table_name,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
        )
    pitr = props.get("PointInTimeRecoverySpecification", {})
    if pitr.get("PointInTimeRecoveryEnabled"):
        client.update_continuous_backups(
            TableName=table_name,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
        )
