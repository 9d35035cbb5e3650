"""Threads through the chat and the write pipeline (seed 004), on both stores.

The extraction is scripted here (an honest model behind the port: it returns what a script
says for the transcript it is given), so each test pins what the service does with a beat,
a report or a conclusion; the offline stand-in's own phrasings are tested with it, and the
whole story runs in the thread exam.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.offline_model import OfflineModel
from chatmemory.domain.events import Op
from chatmemory.domain.extraction import Candidate, ExtractionInput, ExtractionResult
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.threads import (
    MAX_LIVE_THREADS,
    Cadence,
    Response,
    ThreadReport,
    ThreadStatus,
    meta_of,
)
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.context import ContextRequest
from tests.support.product import ALICE, Product

Script = Callable[[ExtractionInput], ExtractionResult]
INTERVIEW = "Is job-hunting: interview at Acme on Thursday 2026-12-03."
SECOND_ROUND = "Is job-hunting: second round at Acme on Friday 2026-12-11."


class ScriptedExtraction(OfflineModel):
    """The offline stand-in, whose extraction answers from a script per call."""

    def __init__(self) -> None:
        self.scripts: list[Script] = []
        self.seen: list[ExtractionInput] = []

    def extract(self, request: ExtractionInput) -> ExtractionResult:
        self.seen.append(request)
        return self.scripts.pop(0)(request) if self.scripts else ExtractionResult()


@pytest.fixture
def model() -> ScriptedExtraction:
    return ScriptedExtraction()


@pytest.fixture
def product(stores: Stores, clock: ManualClock, model: ScriptedExtraction) -> Product:
    return Product(stores, clock, model)


def user_line(request: ExtractionInput, number: int = 0) -> str:
    return [line.message_id for line in request.transcript if line.role == "user"][number]


def own_line(request: ExtractionInput, number: int = 0) -> str:
    return [line.message_id for line in request.transcript if line.role == "assistant"][number]


def a_thread(text: str, *, key: str = "job_hunt", **fields: Any) -> Script:
    def script(request: ExtractionInput) -> ExtractionResult:
        values: dict[str, Any] = {
            "category": "work",
            "kind": Kind.THREAD,
            "importance": 6,
            "stated_by": StatedBy.USER,
            "key": key,
            "cadence": Cadence.FAST,
        }
        values.update(fields)
        if values.get("thread") == "first":
            values["thread"] = request.threads[0].number
        return ExtractionResult((Candidate(text=text, evidence=(user_line(request),), **values),))

    return script


def threads(product: Product, status: Status | None = Status.ACTIVE) -> list[Memory]:
    return list(
        product.stores.memories.iter_memories(ALICE, MemoryQuery(status=status, kind=Kind.THREAD))
    )


def plant(
    product: Product, model: ScriptedExtraction, text: str = INTERVIEW, **fields: Any
) -> Memory:
    model.scripts.append(a_thread(text, **fields))
    product.say("I have a job interview at Acme on Thursday.")
    product.go_quiet()
    (row,) = threads(product)
    return row


def days(product: Product, count: int) -> None:
    product.clock.advance(timedelta(days=count))


# ---- the kind -------------------------------------------------------------------------------


def test_a_new_concern_becomes_one_live_thread_with_its_manners(
    product: Product, model: ScriptedExtraction
) -> None:
    row = plant(product, model, cadence=Cadence.EVENT, event_on=date(2026, 12, 3))

    manners = meta_of(row)
    assert row.kind is Kind.THREAD and row.text == INTERVIEW
    assert manners.status is ThreadStatus.LIVE and manners.cadence is Cadence.EVENT
    assert manners.event_on == date(2026, 12, 3) and manners.deflects == 0
    (notice,) = product.notices.pending(ALICE)
    assert INTERVIEW in notice.text


def test_the_extractor_is_shown_the_known_threads_by_number_never_by_id(
    product: Product, model: ScriptedExtraction
) -> None:
    row = plant(product, model)

    product.say("The interview went well.")
    product.go_quiet()

    (known,) = model.seen[-1].threads
    assert known.number == "T1" and known.text == INTERVIEW and known.memory_id == row.memory_id
    assert all(row.memory_id not in line for line in model.seen[-1].known)


def test_a_beat_updates_its_thread_and_the_arc_is_the_history(
    product: Product, model: ScriptedExtraction
) -> None:
    first = plant(product, model)

    model.scripts.append(a_thread(SECOND_ROUND, thread="first", importance=1))
    product.say("It went well — second round on Friday!")
    product.go_quiet()

    (now,) = threads(product)
    assert now.text == SECOND_ROUND and now.supersedes == first.memory_id
    (before,) = threads(product, Status.SUPERSEDED)
    assert before.memory_id == first.memory_id and before.closed_by == now.memory_id
    ops = [event.op for event in product.memories.history(ALICE, now.memory_id)]
    assert ops.count(Op.ADD) == 2 and Op.UPDATE in ops


def test_a_beat_about_a_known_concern_is_never_a_second_thread(
    product: Product, model: ScriptedExtraction
) -> None:
    plant(product, model)

    # the extractor did not name the thread, but the concern's key is the same
    model.scripts.append(a_thread(SECOND_ROUND))
    product.say("Second round at Acme on Friday.")
    product.go_quiet()

    assert [row.text for row in threads(product)] == [SECOND_ROUND]


def test_a_new_concern_below_the_importance_floor_is_not_kept(
    product: Product, model: ScriptedExtraction
) -> None:
    model.scripts.append(a_thread(INTERVIEW, importance=1))
    product.say("I have a job interview at Acme on Thursday.")
    product.go_quiet()

    assert threads(product) == []


def test_past_five_live_threads_the_quietest_goes_dormant(
    product: Product, model: ScriptedExtraction
) -> None:
    for number in range(MAX_LIVE_THREADS + 1):
        model.scripts.append(a_thread(f"Is following concern number {number}.", key=f"c{number}"))
        product.say(f"Something about concern number {number}.")
        product.go_quiet()
        days(product, 1)

    rows = {row.text: meta_of(row).status for row in threads(product)}
    assert list(rows.values()).count(ThreadStatus.LIVE) == MAX_LIVE_THREADS
    assert rows["Is following concern number 0."] is ThreadStatus.DORMANT


# ---- the manners ----------------------------------------------------------------------------


def raised(response: Response) -> Script:
    def script(request: ExtractionInput) -> ExtractionResult:
        thread = request.threads[0].number
        return ExtractionResult(reports=(ThreadReport(thread, own_line(request), response),))

    return script


def test_a_deflection_sleeps_the_thread_and_the_second_leaves_it_dormant(
    product: Product, model: ScriptedExtraction
) -> None:
    # Given an interview five days ahead (an event: it keeps three weeks after its day)
    event_on = product.clock.now().date() + timedelta(days=5)
    row = plant(product, model, cadence=Cadence.EVENT, event_on=event_on)
    days(product, 8)

    # When the persona raises it and the person changes the subject
    model.scripts.append(raised(Response.DEFLECTED))
    product.say("eh, let's talk about something else")
    product.go_quiet()

    # Then it sleeps twice its rhythm
    once = meta_of(threads(product)[0])
    assert once.deflects == 1 and once.asked == product.clock.now().date()
    assert once.sleeps_until == once.asked + timedelta(days=14)
    assert once.status is ThreadStatus.LIVE

    # And the second deflection is an answer too: dormant until they reopen it
    days(product, 15)
    model.scripts.append(raised(Response.DEFLECTED))
    product.say("not now")
    product.go_quiet()
    (twice,) = threads(product)
    assert meta_of(twice).status is ThreadStatus.DORMANT
    ops = [event.op for event in product.memories.history(ALICE, row.memory_id)]
    assert ops.count(Op.DEFLECTED) == 2 and Op.DORMANT in ops


def test_a_report_arrives_even_when_the_slice_holds_no_memory(
    product: Product, model: ScriptedExtraction
) -> None:
    plant(product, model)
    days(product, 8)

    model.scripts.append(raised(Response.ANSWERED))
    product.say("It was fine, thanks.")
    product.go_quiet()

    (row,) = threads(product)
    assert meta_of(row).asked == product.clock.now().date() and meta_of(row).deflects == 0


def test_a_report_on_a_line_that_is_not_the_personas_is_not_trusted(
    product: Product, model: ScriptedExtraction
) -> None:
    plant(product, model)

    def on_the_users_line(request: ExtractionInput) -> ExtractionResult:
        thread = request.threads[0].number
        report = ThreadReport(thread, user_line(request), Response.DEFLECTED)
        return ExtractionResult(reports=(report,))

    model.scripts.append(on_the_users_line)
    product.say("whatever")
    product.go_quiet()

    assert meta_of(threads(product)[0]).deflects == 0


def conclusion(text: str) -> Script:
    def script(request: ExtractionInput) -> ExtractionResult:
        fact = Candidate(
            text=text,
            category="work",
            kind=Kind.FACT,
            importance=2,  # the concluding fact rides whatever its importance
            stated_by=StatedBy.USER,
            evidence=(user_line(request),),
            key="job",
            concludes=request.threads[0].number,
        )
        return ExtractionResult((fact,))

    return script


def test_a_resolution_writes_the_fact_and_the_thread_rests_under_it(
    product: Product, model: ScriptedExtraction
) -> None:
    thread = plant(product, model)

    model.scripts.append(conclusion("Works at Acme since December 2026."))
    product.say("I got the job at Acme!")  # the reply that follows is its acknowledgement
    product.go_quiet()

    assert threads(product) == []
    (closed,) = threads(product, Status.CLOSED)
    (fact,) = [m for m in product.stores.memories.iter_memories(ALICE) if m.kind is Kind.FACT]
    assert fact.text == "Works at Acme since December 2026."
    assert closed.memory_id == thread.memory_id and closed.closed_by == fact.memory_id
    manners = meta_of(closed)
    assert manners.status is ThreadStatus.RESOLVED and manners.acknowledged
    ops = [event.op for event in product.memories.history(ALICE, thread.memory_id)]
    assert Op.RESOLVED in ops and Op.CLOSE in ops


# ---- the nightly review ---------------------------------------------------------------------


def test_the_nightly_review_puts_a_thread_quiet_past_three_rhythms_to_sleep_once(
    product: Product, model: ScriptedExtraction
) -> None:
    row = plant(product, model)

    days(product, 21)
    assert product.threads.review().dormant == 0  # three weeks is not yet past

    days(product, 1)
    first = product.threads.review()
    again = product.threads.review()

    assert (first.checked, first.dormant) == (1, 1)
    assert (again.checked, again.dormant) == (0, 0)
    (after,) = threads(product)
    assert after.memory_id == row.memory_id and meta_of(after).status is ThreadStatus.DORMANT
    assert after.text == row.text and after.created_at == row.created_at
    events = product.memories.history(ALICE, row.memory_id)
    assert [e.actor.value for e in events if e.op is Op.DORMANT] == ["system"]


# ---- the read path --------------------------------------------------------------------------


def context(product: Product, message: str, **request: Any) -> Any:
    return product.context.build(ContextRequest(user_id=ALICE, message=message, **request))


def test_a_ripe_thread_is_in_the_prompt_with_its_age_and_a_nudge(
    product: Product, model: ScriptedExtraction
) -> None:
    plant(product, model)
    days(product, 8)

    built = context(product, "Hi!")

    (line,) = built.blocks.threads
    assert line.text == INTERVIEW
    assert "last heard 8 days ago" in line.line and "natural moment to ask" in line.line
    assert INTERVIEW in built.rendered.system[1].text


def test_a_chat_reopened_after_quiet_days_opens_as_a_reunion_with_the_one_question(
    product: Product, model: ScriptedExtraction
) -> None:
    plant(product, model)
    days(product, 8)

    built = context(product, "Hi!")

    assert built.blocks.kickoff.startswith("You last talked 8 days ago")
    assert INTERVIEW in built.blocks.kickoff and "ask this one thing" in built.blocks.kickoff


def test_no_reunion_on_a_first_meeting_nor_after_a_short_gap(
    product: Product, model: ScriptedExtraction
) -> None:
    assert context(product, "Hi!").blocks.kickoff == ""

    result = product.say("Hello there")
    days(product, 2)
    assert context(product, "Hi!", conversation_id=result.conversation_id).blocks.kickoff == ""


def test_once_a_reply_named_a_thread_today_no_other_ask_is_invited(
    product: Product, model: ScriptedExtraction
) -> None:
    plant(product, model)
    days(product, 8)
    asked = product.say("How did the interview at Acme go, you ask? Fine.")  # echoed by the reply

    built = context(product, "Anything else?", conversation_id=asked.conversation_id)

    (line,) = built.blocks.threads
    assert "already raised here today" in line.line and built.blocks.kickoff == ""


def test_a_temporary_chat_and_memory_off_see_no_thread(
    product: Product, model: ScriptedExtraction
) -> None:
    plant(product, model)
    days(product, 8)

    temporary = context(product, "Hi!", temporary=True)
    product.settings.update(ALICE, enabled=False)
    off = context(product, "Hi!")

    for built in (temporary, off):
        assert built.blocks.threads == () and built.blocks.kickoff == ""
