"""Lambda entry point for the purge pipeline's RebuildProfile task (one RebuildProfiles
Map iteration).

Step Functions passes the purge request plus `persona`, a profile built from a deleted
memory. The digest is rebuilt from the memories still visible (no model call); a failure
is recorded on the request's tombstones and counted for the alarm. Rebuilding from the
same memories gives the same digest, so a retry is harmless. Answers `{"rebuilt": bool}`.
"""

from __future__ import annotations

from chatmemory.config import container
from chatmemory.services.pipeline import ProfileRebuilt
from chatmemory.tasks.handler import purge_step
from chatmemory.tasks.payloads import PurgeProfileTask
from chatmemory.telemetry import count


def rebuild_profile(task: PurgeProfileTask) -> ProfileRebuilt:
    """Whether the persona's digest changed once the deleted memories are gone."""
    result = container().purge.rebuild_profile(task.request, task.persona)
    if result.rebuilt:
        count("ProfileRebuilt")
    return result


lambda_handler = purge_step(PurgeProfileTask, rebuild_profile, done="profile rebuilt")
