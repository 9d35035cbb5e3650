"""The memory tools an MCP host sees: what each asks for, what it answers, which route it calls.

| tool | route |
|---|---|
| `memory_state` | `GET /v1/memories` (`as_of` for what was believed then), every page |
| `memory_recall` | `POST /v1/recall` |
| `memory_observe` | `POST /v1/observe` |
| `memory_correct` | `PATCH /v1/memories/{id}` |
| `memory_forget` | `DELETE /v1/memories/{id}`, or `DELETE /v1/memories` (everything, confirmed) |

Each call is bounded: the HTTP client's timeout, and one deadline over the whole call (a
state read may take several pages). Whatever goes wrong comes back as a tool result with
`isError` and the contract's `{"error": {"code", "message"}}` — never an exception into the
host. Identity is the bearer token's: the caller's own on streamable HTTP when it sends one,
else the token this server was started with.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

import chatmemory
from chatmemory.domain import rules
from chatmemory.domain.memory import Kind
from chatmemory.mcp.api_client import ApiError, MemoryApi, TokenSource, path_id

log = logging.getLogger(__name__)

#: the phrase `memory_forget` needs before it forgets everything
FORGET_EVERYTHING = "forget everything"
#: pages of 100 `memory_state` reads at most: the 500 memories a user has in use
STATE_PAGES = 5
_BEARER = "bearer "

INSTRUCTIONS = (
    "chatmemory remembers what the user tells you across conversations. After each turn "
    "of your conversation, call memory_observe with the user's message and your reply; "
    "chatmemory learns from it in the background once the conversation goes quiet. Before "
    "answering something personal, call memory_recall with the question. memory_state lists "
    "everything known now (or on a past date). When the user says a memory is wrong, call "
    "memory_correct; when they ask you to forget something, memory_forget. Memory ids come "
    "from memory_state and memory_recall."
)

# ---- what the tools ask for ------------------------------------------------------------------

Persona = Annotated[
    str | None,
    Field(
        default=None,
        max_length=rules.PERSONA_MAX,
        pattern=r"^[a-z0-9][a-z0-9_-]*$",
        description='Whose memories: the persona that holds them (default "assistant").',
    ),
]
MemoryId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="The memory's id, as memory_state or memory_recall gave it (mem_…).",
    ),
]
ConversationId = Annotated[
    str | None,
    Field(
        default=None,
        min_length=1,
        max_length=64,
        description="The conversation_id an earlier memory_observe returned, to continue that "
        "conversation; leave it out for the first turn of a new one.",
    ),
]

# ---- what they answer ------------------------------------------------------------------------


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class KnownMemory(_Answer):
    memory_id: str
    text: str
    kind: str
    category: str
    persona: str
    stated_by: str = Field(description="user: said by the user · inferred: concluded from it")
    created_at: str = Field(description="When it was learned (ISO-8601 UTC).")
    valid_until: str | None = Field(default=None, description="When it stops being true.")
    due: str | None = Field(
        default=None, description='How long it is still good for: "2 days left".'
    )

    @classmethod
    def of(cls, row: dict[str, Any]) -> KnownMemory:
        due = row.get("due_in")
        return cls.model_validate(
            {**row, "due": due.get("text") if isinstance(due, dict) else None}
        )


class StateOut(_Answer):
    memories: list[KnownMemory] = Field(description="Active memories, newest first.")
    as_of: str | None = Field(description="The day they were believed on; null: today.")
    complete: bool = Field(description="false: there were more than this tool reads.")


class RecalledMemory(_Answer):
    rank: int
    memory_id: str
    label: str = Field(description="The memory's sentence, at most 20 words.")
    category: str
    kind: str
    score: float = Field(description="Relevance to the query, weighed by how fresh it is.")
    unasked: bool = Field(description="true: related, from a category the others are not in.")
    due: str | None = None
    reasoning: str | None = Field(default=None, description="Why it was stored (expanded hits).")
    evidence: list[dict[str, Any]] | None = Field(
        default=None, description="The messages it rests on (expanded hits)."
    )

    @classmethod
    def of(cls, row: dict[str, Any]) -> RecalledMemory:
        due = row.get("due_in")
        return cls.model_validate(
            {**row, "due": due.get("text") if isinstance(due, dict) else None}
        )


class RecallOut(_Answer):
    items: list[RecalledMemory] = Field(description="Best first; the unasked ones last.")
    hidden: int = Field(description="How many more matched and were not returned.")


class ObserveOut(_Answer):
    conversation_id: str = Field(description="Pass it with the next turn of this conversation.")
    turn_id: str
    message_ids: list[str]
    stored: bool = Field(description="false: this turn was stored before (a retry).")
    learns: bool = Field(
        description="false: memory is off, the persona muted, or the turn temporary — nothing "
        "will be learned from it."
    )


class CorrectOut(_Answer):
    memory: KnownMemory = Field(description="The memory as corrected: a new version, new id.")
    replaced: str = Field(description="The id it replaced, kept as history.")


class ForgetOut(_Answer):
    forgotten: str = Field(description='The memory id forgotten, or "everything".')


class ErrorDetail(_Answer):
    code: str
    message: str


class ErrorOut(_Answer):
    error: ErrorDetail


def _success(answer: BaseModel) -> CallToolResult:
    structured = answer.model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
        structured_content=structured,
    )


def _failure(code: str, message: str) -> CallToolResult:
    error = ErrorOut(error=ErrorDetail(code=code, message=message)).model_dump()
    return CallToolResult(
        content=[TextContent(type="text", text=f"{code}: {message}")],
        structured_content=error,
        is_error=True,
    )


def default_turn_id(conversation_id: str | None, user_message: str, reply: str) -> str:
    """A turn id when the host gives none. In a conversation, one derived from what the
    turn says: the same turn sent twice is stored once (two identical turns in one
    conversation need ids of their own). A first turn gets a fresh one: derived, two new
    conversations that open alike ("hi" / "Hello!") would be taken for one."""
    if conversation_id is None:
        return "mcp-" + uuid.uuid4().hex
    said = "\x1f".join([conversation_id, user_message, reply])
    return "mcp-" + hashlib.sha256(said.encode("utf-8")).hexdigest()[:40]


class MemoryTools:
    """The five tools over one API, each call under `deadline_s`."""

    def __init__(self, api: MemoryApi, token: TokenSource, *, deadline_s: float) -> None:
        self._api = api
        self._token = token
        self._deadline_s = deadline_s

    def server(self) -> MCPServer:
        """An MCP server holding the tools (run it over stdio or streamable HTTP)."""
        server: MCPServer = MCPServer(
            "chatmemory",
            title="chatmemory",
            instructions=INSTRUCTIONS,
            version=chatmemory.__version__,
            log_level="WARNING",
        )
        read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
        server.add_tool(
            self.memory_state,
            title="What is known about the user",
            annotations=read_only,
        )
        server.add_tool(
            self.memory_recall, title="Recall memories for a question", annotations=read_only
        )
        server.add_tool(
            self.memory_observe,
            title="Report a finished turn",
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=True
            ),
        )
        server.add_tool(
            self.memory_correct,
            title="Correct a memory",
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
        )
        server.add_tool(
            self.memory_forget,
            title="Forget a memory, or everything",
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=True, idempotent_hint=True
            ),
        )
        return server

    # ---- the tools (their docstrings are what the model reads) ---------------------------------

    async def memory_state(
        self,
        ctx: Context,
        *,
        persona: Persona = None,
        kind: Annotated[
            Kind | None, Field(default=None, description="Only memories of this kind.")
        ] = None,
        as_of: Annotated[
            str | None,
            Field(
                default=None,
                min_length=10,
                max_length=40,
                description="A past date (YYYY-MM-DD) or instant: what was believed then, as "
                "it stood then. Leave it out for what is known now.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, StateOut]:
        """Everything chatmemory knows about the user now: the memories in use, newest
        first, each with its id, kind and how long it is still good for. With `as_of`, what
        was believed on that past date instead."""

        async def work(token: str | None) -> BaseModel:
            query: dict[str, str | int] = {"limit": 100}
            for name, value in (("persona", persona), ("kind", kind), ("as_of", as_of)):
                if value is not None:
                    query[name] = str(value)
            rows: list[dict[str, Any]] = []
            for _ in range(STATE_PAGES):
                page = await self._api.call("GET", "/v1/memories", token, query=query)
                rows += page["memories"]
                if not page.get("next"):
                    return StateOut(
                        memories=[KnownMemory.of(r) for r in rows], as_of=as_of, complete=True
                    )
                query["next"] = page["next"]
            return StateOut(memories=[KnownMemory.of(r) for r in rows], as_of=as_of, complete=False)

        return await self._answer(ctx, work)

    async def memory_recall(
        self,
        ctx: Context,
        *,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=2000,
                description="What to look up, in the user's words: the question or topic.",
            ),
        ],
        k: Annotated[int, Field(ge=1, le=50, description="How many relevant memories, 1..50.")] = 8,
        expand: Annotated[
            int,
            Field(
                ge=0,
                le=50,
                description="How many of the first hits also say why they were stored and the "
                "messages they rest on (0..k).",
            ),
        ] = 0,
        persona: Persona = None,
    ) -> Annotated[CallToolResult, RecallOut]:
        """The user's memories relevant to a query, best first, then up to three related
        ones from other topics (`unasked`). `hidden` says how many more matched than were
        returned. Nothing is recorded as used."""

        async def work(token: str | None) -> BaseModel:
            body: dict[str, Any] = {"query": query, "k": k, "expand": min(expand, k)}
            if persona is not None:
                body["persona"] = persona
            found = await self._api.call("POST", "/v1/recall", token, body=body)
            return RecallOut(
                items=[RecalledMemory.of(item) for item in found["items"]], hidden=found["hidden"]
            )

        return await self._answer(ctx, work)

    async def memory_observe(
        self,
        ctx: Context,
        *,
        user_message: Annotated[
            str,
            Field(
                min_length=1,
                max_length=rules.MESSAGE_MAX,
                description="What the user said in this turn, verbatim.",
            ),
        ],
        assistant_message: Annotated[
            str,
            Field(
                max_length=rules.ASSISTANT_MESSAGE_MAX,
                description="What you replied, verbatim ('' if you have not replied).",
            ),
        ] = "",
        conversation_id: ConversationId = None,
        turn_id: Annotated[
            str | None,
            Field(
                default=None,
                min_length=1,
                max_length=128,
                pattern=r"^[A-Za-z0-9_.:-]+$",
                description="Your own id for this turn (unique per user), which makes a retry "
                "safe. Left out: derived from the turn's words within a conversation, fresh "
                "for a conversation's first turn.",
            ),
        ] = None,
        persona: Persona = None,
        temporary: Annotated[
            bool,
            Field(description="true: an off-the-record chat — nothing is learned, it expires."),
        ] = False,
    ) -> Annotated[CallToolResult, ObserveOut]:
        """Report a turn of your conversation once it is over: the user's message and your
        reply. chatmemory learns what is worth remembering from it in the background, once
        the conversation goes quiet. Safe to send again: the same turn is stored once."""
        chosen = turn_id or default_turn_id(conversation_id, user_message, assistant_message)

        async def work(token: str | None) -> BaseModel:
            body: dict[str, Any] = {
                "turn_id": chosen,
                "user": user_message,
                "assistant": assistant_message,
                "temporary": temporary,
            }
            if conversation_id is not None:
                body["conversation_id"] = conversation_id
            if persona is not None:
                body["persona"] = persona
            observed = await self._api.call("POST", "/v1/observe", token, body=body)
            return ObserveOut.model_validate({**observed, "turn_id": chosen})

        return await self._answer(ctx, work)

    async def memory_correct(
        self,
        ctx: Context,
        *,
        memory_id: MemoryId,
        text: Annotated[
            str,
            Field(
                min_length=1,
                max_length=rules.MEMORY_TEXT_MAX,
                description="The corrected memory: one standalone sentence about the user, "
                'in the third person ("Lives in Bengaluru.").',
            ),
        ],
    ) -> Annotated[CallToolResult, CorrectOut]:
        """Correct a memory the user says is wrong. The corrected text becomes a new version
        with a new id; the old one is kept only as history and never used again."""

        async def work(token: str | None) -> BaseModel:
            corrected = await self._api.call(
                "PATCH", f"/v1/memories/{path_id(memory_id)}", token, body={"text": text}
            )
            return CorrectOut(memory=KnownMemory.of(corrected), replaced=memory_id)

        return await self._answer(ctx, work)

    async def memory_forget(
        self,
        ctx: Context,
        *,
        memory_id: Annotated[
            str | None,
            Field(
                default=None,
                min_length=1,
                max_length=128,
                pattern=r"^[A-Za-z0-9_.:-]+$",
                description="The memory to forget. Leave it out only to forget everything.",
            ),
        ] = None,
        everything: Annotated[
            bool,
            Field(description="true: forget every memory of the user (needs `confirm`)."),
        ] = False,
        confirm: Annotated[
            str | None,
            Field(
                default=None,
                max_length=40,
                description='With everything=true: exactly "forget everything", only after '
                "the user asked for it in so many words.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, ForgetOut]:
        """Forget a memory for good: it is gone from the next call on and every copy is
        purged. With everything=true and confirm="forget everything", forget all of them."""
        if everything and memory_id is not None:
            return _failure("validation_error", "give memory_id or everything=true, not both")
        if everything and confirm != FORGET_EVERYTHING:
            return _failure(
                "confirmation_required",
                f'forgetting everything needs confirm="{FORGET_EVERYTHING}", after the user '
                "asked for it",
            )
        if not everything and memory_id is None:
            return _failure("validation_error", "memory_id is required (or everything=true)")

        async def work(token: str | None) -> BaseModel:
            if memory_id is None:
                await self._api.call("DELETE", "/v1/memories", token)
                return ForgetOut(forgotten="everything")
            await self._api.call("DELETE", f"/v1/memories/{path_id(memory_id)}", token)
            return ForgetOut(forgotten=memory_id)

        return await self._answer(ctx, work)

    # ---- the one way a call is made ------------------------------------------------------------

    async def _answer(
        self, ctx: Context, work: Callable[[str | None], Awaitable[BaseModel]]
    ) -> CallToolResult:
        """`work` under the deadline, with the caller's token; every failure as an error
        result in the contract's shape."""
        try:
            with anyio.fail_after(self._deadline_s):
                return _success(await work(self._caller_token(ctx)))
        except ApiError as exc:
            return _failure(exc.code, exc.message)
        except TimeoutError:
            return _failure(
                "timeout",
                f"chatmemory did not finish within {self._deadline_s:g} s; the call may or may "
                "not have been applied",
            )
        except (ValidationError, KeyError, TypeError):
            return _failure("bad_answer", "the API answered outside its contract")
        except Exception as exc:  # never into the host; the type only (messages may quote text)
            log.warning("memory tool failed", extra={"error_type": type(exc).__name__})
            return _failure("internal_error", "the memory tool failed; nothing more is known")

    def _caller_token(self, ctx: Context) -> str | None:
        """The bearer token a streamable-HTTP caller sent, else this server's own."""
        headers = _headers(ctx)
        sent = headers.get("authorization", "") if headers is not None else ""
        if sent.lower().startswith(_BEARER) and sent[len(_BEARER) :].strip():
            return sent[len(_BEARER) :].strip()
        return self._token()


def _headers(ctx: Context) -> Any:
    try:
        return ctx.headers
    except (ValueError, AttributeError):  # no request (a direct call): no headers
        return None
