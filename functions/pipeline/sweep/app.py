"""Lambda entry point for the daily sweep: starts the write pipeline, in deep mode (the
stronger model, a larger budget), for every conversation whose cursor fell behind (a lost
idle message, a failed run, a timed-out Express execution), hands every quiet room a
persona has not read to the end back to the idle queue, and starts a purge for every user
whose deletions are still not purged a while after the delete (a purge that failed or
never started), and queues again the uses jobs of memories still waiting for their
vectors (an embedder call that failed) or their own uses (a model call that failed).
It also finishes the purge of every deleted conversation whose purge stopped, and masks
the secrets in messages stored before they were masked on write, a share a day while
time is left (resumed where it stopped; once done, one read a day).
The scheduled event itself carries nothing we need.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from chatmemory.config import container
from chatmemory.telemetry import count, logger, metrics, tracer

#: the masking's batches stop while this much of the function's time is left
MASKING_STOPS_WITH_MS_LEFT = 60_000


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    started = container().idle.sweep(deep=True)
    # A quiet room's write needs the model: its check goes back on the idle queue.
    rooms = container().room_writes.sweep(hand_off=container().rooms.check_soon, batch=1000)
    purges = container().purge_sweep.sweep()
    # Memories whose uses job failed (its queue does not retry it), or stored without
    # vectors: their jobs again.
    handed = container().uses.hand_off(container().jobs)
    uses = handed.rows
    count("SweepStarted", started)
    count("SweepUsesHandedOff", uses)
    # Rows still without vectors a day on: the embedder keeps failing for them.
    count("SweepRowsWithoutVectors", handed.without_vectors)
    count("SweepRoomWrites", rooms)
    count("SweepPurgesStarted", purges)
    done = {
        "started": started,
        "rooms": rooms,
        "purges": purges,
        "uses": uses,
        "without_vectors": handed.without_vectors,
    }
    erased = container().conversation_deletes.finish()
    masked = container().message_masking.run(
        keep_going=lambda: context.get_remaining_time_in_millis() > MASKING_STOPS_WITH_MS_LEFT
    )
    count("SweepConversationsPurged", erased)
    count("SweepMessagesMasked", masked.rewritten)
    logger.info(
        "sweep finished deleted conversations and masked stored messages",
        extra={"conversations": erased, "masked": masked.rewritten, "masking_done": masked.done},
    )
    logger.info("sweep done", extra=done)
    return done
