"""`bench/calibrate.py --embedder titan --region … --dimensions …` runs end to end over a
real boto3 `bedrock-runtime` client, with no network: every InvokeModel the run makes is
answered by a botocore `before-call` handler (the hook botocore's Stubber answers through),
with the hashing embedder's vector of the request's text at the size the request asks for,
in Titan V2's response shape. The grids are cut to one or two values so the run stays short;
the method is the same.
"""

from __future__ import annotations

import importlib
import io
import json
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.response import StreamingBody

from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.titan_embedder import TITAN_V2, TitanEmbedder
from tests.support.template import ROOT

# bench/ is a folder of scripts that import one another by name.
sys.path.insert(0, str(ROOT / "bench"))
calibrate = importlib.import_module("calibrate")


class TitanAnswers:
    """Answers InvokeModel as Titan V2 would, and keeps what each request asked."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.regions: list[str] = []
        self._hashing: dict[int, HashingEmbedder] = {}

    def client(self, service: str, region_name: str | None = None, **kwargs: Any) -> Any:
        assert service == "bedrock-runtime"
        created = boto3.session.Session().client(service, region_name=region_name, **kwargs)
        created.meta.events.register("before-call.bedrock-runtime.InvokeModel", self.answer)
        self.regions.append(created.meta.region_name)
        return created

    def answer(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        body = json.loads(params["body"])
        self.requests.append({"path": unquote(params["url_path"]), **body})
        size = int(body["dimensions"])
        hashing = self._hashing.setdefault(size, HashingEmbedder(size))
        vector = [float(x) for x in hashing.embed([body["inputText"]])[0]]
        payload = json.dumps(
            {"embedding": vector, "inputTextTokenCount": len(body["inputText"].split())}
        ).encode()
        parsed = {
            "body": StreamingBody(io.BytesIO(payload), len(payload)),
            "contentType": "application/json",
        }
        return AWSResponse("https://bedrock-runtime", 200, {}, None), parsed


@pytest.fixture
def titan(monkeypatch: pytest.MonkeyPatch, aws_env: None) -> Iterator[TitanAnswers]:
    answers = TitanAnswers()
    monkeypatch.setattr(boto3, "client", answers.client)
    # One value per knob: the run goes through every step of the method, briefly.
    for name, values in {
        "OWN_USES": (0.9,),
        "TOP_TWO": (0.5,),
        "ALL_USES": (0.0,),
        "IMPORTANCE": (0.2,),
        "BORROWED": (0.7,),
        "BAR_CHOICES": (0.5, 0.99),
        "COMPANIONS": (0.28,),
        "RATIOS": (0.0, 0.7),
    }.items():
        monkeypatch.setattr(calibrate, name, values)
    yield answers


def test_titan_calibration_runs_end_to_end_at_the_chosen_size(
    titan: TitanAnswers, capsys: pytest.CaptureFixture[str]
) -> None:
    # When the calibration runs with Titan at 512 dimensions in a region
    calibrate.main(["--embedder", "titan", "--region", "eu-west-1", "--dimensions", "512"])

    # Then every text went to Titan V2 in that region, asking for 512 normalised dimensions
    assert titan.regions and set(titan.regions) == {"eu-west-1"}
    assert len(titan.requests) > 500  # both labelled sets, their uses and their questions
    assert {r["dimensions"] for r in titan.requests} == {512}
    assert all(r["normalize"] is True for r in titan.requests)
    assert {r["path"] for r in titan.requests} == {f"/model/{TITAN_V2}/invoke"}
    # And it printed the chosen parameters and both sets' splits for Titan at that size
    printed = capsys.readouterr().out
    assert "## Calibration for titan-v2-512" in printed
    for row in (
        "| one user | dev |",
        "| one user | test |",
        "| people | dev |",
        "| people | test |",
    ):
        assert row in printed


def test_titan_needs_a_region_and_one_of_its_sizes() -> None:
    with pytest.raises(SystemExit):
        calibrate.arguments(["--embedder", "titan"])
    with pytest.raises(SystemExit):
        calibrate.arguments(["--embedder", "titan", "--region", "eu-west-1", "--dimensions", "768"])
    chosen = calibrate.arguments(["--embedder", "titan", "--region", "eu-west-1"])
    assert chosen.dimensions == 512
    assert TitanEmbedder(object(), dimensions=chosen.dimensions).name == "titan-v2-512"
