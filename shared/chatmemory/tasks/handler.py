"""The one shape of a Step Functions task Lambda: parse the payload, run the step, dump
the typed result.

A task's app.py names its payload model and its step (one service call, plus the step's
own metrics); `step_task` wraps it in the decorators every function wears, validates the
event against the model before anything is touched (a malformed payload fails the task
with a ValidationError), puts the payload's ids on every log line and turns the step's
dataclass into the JSON the ASL's ResultSelector reads.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol, TypeVar

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import TypeAdapter

from chatmemory.deadline import remaining_seconds_of, request_deadline
from chatmemory.telemetry import count, logger, metrics, tracer

# A step that changes nothing publishes no metrics; that is expected, not worth a warning.
warnings.filterwarnings("ignore", message="No application metrics to publish")

#: what a purge step that fails adds to before it raises (the purge's alarm metric)
PURGE_STEP_FAILED = "PurgeStepFailed"

TaskHandler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


class Payload(Protocol):
    def log_keys(self) -> dict[str, object]: ...

    def pipeline_start(self) -> datetime | None: ...


class StepResult(Protocol):
    """A dataclass: every service step reports one."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


P = TypeVar("P", bound=Payload)
R = TypeVar("R", bound=StepResult)


def step_task(
    model: type[P],
    step: Callable[[P], R],
    *,
    done: str | None = None,
    failures: str | None = None,
) -> TaskHandler:
    """The task's `lambda_handler`: `model` validates the event, `step` runs it.

    `done`: log the result under this message (lists as their length: a log line needs
    the count, not the ids). `failures`: a counter the step adds to when it raises.
    """

    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        task = parse(event=event, model=model)
        logger.append_keys(**task.log_keys())
        try:
            # A model call ends (as the step's error, which the state machine retries)
            # while the function still runs: never as a timeout that loses the error.
            with request_deadline(_time_for(task, context)):
                result = step(task)
        except Exception:
            if failures:
                count(failures)
            raise
        answer = payload(result)
        if done:
            logger.info(done, extra={key: _loggable(value) for key, value in answer.items()})
        return answer

    return lambda_handler


#: an Express execution ends at 300 s; what a step may use of it, leaving RecordFailure
#: (10 s) and its throttle retries room to record a failure before the run is cut off
PIPELINE_BUDGET_SECONDS = 250.0


def _time_for(task: Payload, context: LambdaContext) -> float | None:
    """The step's time: its Lambda's remaining time, and no more than its run has left."""
    remaining = remaining_seconds_of(context)
    started = task.pipeline_start()
    if started is None:
        return remaining
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    run_left = PIPELINE_BUDGET_SECONDS - (datetime.now(UTC) - started).total_seconds()
    return run_left if remaining is None else min(remaining, run_left)


def purge_step(model: type[P], step: Callable[[P], R], *, done: str) -> TaskHandler:
    """A purge task: its result logged under `done`, a failure counted for the alarm and
    raised, so the state machine retries it (the service has recorded it already)."""
    return step_task(model, step, done=done, failures=PURGE_STEP_FAILED)


def payload(result: StepResult) -> dict[str, Any]:
    """The JSON object a step's result is in a state machine (tuples become lists)."""
    answer: dict[str, Any] = _adapter(type(result)).dump_python(result, mode="json")
    return answer


@functools.cache
def _adapter(kind: type[StepResult]) -> TypeAdapter[StepResult]:
    return TypeAdapter(kind)


def _loggable(value: object) -> object:
    return len(value) if isinstance(value, list) else value
