"""A write pipeline step keeps to its run's budget: late in a run, its model gets less time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from chatmemory.deadline import ANSWER_MARGIN_SECONDS, time_left
from chatmemory.local.server import LocalLambdaContext
from chatmemory.tasks.handler import PIPELINE_BUDGET_SECONDS, step_task
from chatmemory.tasks.payloads import RunTask


@dataclass(frozen=True)
class Seen:
    """What the step saw of its time."""

    seconds_left: float | None


def _step_sees_time_left(task: RunTask) -> Seen:
    return Seen(time_left())


def run(started_seconds_ago: float | None, lambda_seconds_left: float) -> float:
    handler = step_task(RunTask, _step_sees_time_left)
    event: dict[str, object] = {"user_id": "user-1", "run_id": "run-1"}
    if started_seconds_ago is not None:
        started = datetime.now(UTC) - timedelta(seconds=started_seconds_ago)
        event["pipeline_started_at"] = started.isoformat().replace("+00:00", "Z")
    context = LocalLambdaContext(function_name="route")
    context.deadline = context.deadline - 29 + lambda_seconds_left
    left = handler(event, context)["seconds_left"]
    assert isinstance(left, float)
    return left


def test_early_in_its_run_a_step_has_its_lambdas_time() -> None:
    left = run(started_seconds_ago=10, lambda_seconds_left=60)

    assert left == pytest.approx(60 - ANSWER_MARGIN_SECONDS, abs=0.5)


def test_late_in_its_run_a_step_has_only_what_is_left_of_the_budget() -> None:
    # Given a step that starts 230 s into its run, with a minute of Lambda time
    left = run(started_seconds_ago=230, lambda_seconds_left=60)

    # Then its model calls must end within the run's budget, not the Lambda's minute
    assert left == pytest.approx(PIPELINE_BUDGET_SECONDS - 230 - ANSWER_MARGIN_SECONDS, abs=0.5)


def test_past_the_budget_a_step_has_no_time_for_the_model() -> None:
    assert run(started_seconds_ago=PIPELINE_BUDGET_SECONDS + 5, lambda_seconds_left=60) < 0


def test_a_step_its_state_gives_no_start_keeps_its_lambdas_time() -> None:
    left = run(started_seconds_ago=None, lambda_seconds_left=20)

    assert left == pytest.approx(20 - ANSWER_MARGIN_SECONDS, abs=0.5)
