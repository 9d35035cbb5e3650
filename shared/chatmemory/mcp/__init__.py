"""chatmemory's memory as tools for an MCP host (`chatmemory mcp`).

A thin client of the HTTP API: it holds no store of its own, so the same server works
against the local server or a deployed stage. `api_client.py` speaks the contract with a
deadline on every call, `tools.py` defines the five tools and their schemas, `command.py`
is the CLI command that serves them over stdio or streamable HTTP.
"""
