"""What an MCP host does with chatmemory's tools, for the tests: call one, read its answer."""

from __future__ import annotations

from typing import Any

from mcp import Client

from chatmemory.config import Container


class ToolFailed(AssertionError):
    """A tool answered with an error result where the test expected an answer."""


async def answer(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """The structured answer of a call that must succeed."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise ToolFailed(f"{tool} failed: {result.content}")
    structured: dict[str, Any] = result.structured_content
    return structured


async def error(client: Client, tool: str, **arguments: Any) -> dict[str, str]:
    """The contract's error of a call that must fail (an isError result, never a raise)."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} succeeded: {result.structured_content}"
    failed: dict[str, str] = result.structured_content["error"]
    return failed


def flush(container: Container) -> None:
    """What `chatmemory flush` does: every quiet conversation's write runs now."""
    container.idle.sweep(now_or_never=True)
    jobs = container.jobs_run_here
    if jobs is not None:
        jobs.run_pending()
