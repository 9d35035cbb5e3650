"""Lambda entry point for the purge pipeline's RewriteSummary task (one Map iteration).

Step Functions passes the purge request plus `conversation_id`. The summary is rebuilt
from the raw messages it covers, leaving out every turn that is the source of a deleted
memory (one model call). ModelUnavailable and ConcurrentChange (a fold moved the
summary meanwhile) propagate: the state machine retries them. Answers
`{"rewritten", "turns_left_out"}`.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.purge import SummaryRewritten
from chatmemory.tasks.handler import purge_step
from chatmemory.tasks.payloads import PurgeSummaryTask
from chatmemory.telemetry import count


def rewrite_summary(task: PurgeSummaryTask) -> SummaryRewritten:
    """Whether the summary was rebuilt, and how many turns it left out."""
    result = container().purge.rewrite_summary(task.request, task.conversation_id)
    if result.rewritten:
        count("SummaryRewritten")
    return result


lambda_handler = purge_step(PurgeSummaryTask, rewrite_summary, done="summary rewritten")
