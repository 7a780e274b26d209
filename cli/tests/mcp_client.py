"""A real third-party MCP client (the `mcp` package from PyPI) against svc's MCP server.

Run by cli/tests/mcp.rs with the virtualenv of scripts/mcp-venv.sh:

    python mcp_client.py stdio <svc binary>      # env: SVC_BASE_URL and a stored or given key
    python mcp_client.py http <base url> <agent key>

Connects over the chosen transport, initializes, lists the tools and calls them; prints one
JSON document with what it saw. Assertions live in the Rust test.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


def dump_result(r):
    return {
        "is_error": bool(r.isError),
        "structured": r.structuredContent,
        "text": [c.text for c in r.content if getattr(c, "type", None) == "text"],
    }


async def exercise(session, tag):
    init = await session.initialize()
    await session.send_ping()
    tools = await session.list_tools()
    out = {
        "protocol_version": str(init.protocolVersion),
        "server_name": init.serverInfo.name,
        "tools": [
            {
                "name": t.name,
                "input_schema": t.inputSchema,
                "annotations": t.annotations.model_dump(exclude_none=True) if t.annotations else None,
            }
            for t in tools.tools
        ],
    }
    email = f"mcp-{tag}@example.com"
    args = {"event": "pricing_viewed", "email": email, "channel": "web",
            "_idempotency_key": f"mcp-{tag}-1"}
    out["ingest"] = dump_result(await session.call_tool("ingest_event", args))
    out["ingest_again"] = dump_result(await session.call_tool("ingest_event", args))
    out["dry_run"] = dump_result(await session.call_tool(
        "ingest_event", {"event": "x", "email": email, "_mode": "dry_run"}))
    out["context"] = dump_result(await session.call_tool("get_customer_context", {"customer": email}))
    out["mode_denied"] = dump_result(await session.call_tool(
        "ingest_event", {"event": "x", "email": email, "_mode": "queue"}))
    out["invalid"] = dump_result(await session.call_tool("ingest_event", {"email": email}))
    # A tool of the catalogue this key holds no grant for: refused by the gateway.
    out["no_grant"] = dump_result(await session.call_tool("write_memory", {"customer": email}))
    return out


async def main():
    transport = sys.argv[1]
    if transport == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=["mcp"], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await exercise(session, "stdio")
    else:
        base, key = sys.argv[2], sys.argv[3]
        async with streamablehttp_client(f"{base}/mcp", headers={"Authorization": f"Bearer {key}"}) as (
            read,
            write,
            get_session_id,
        ):
            async with ClientSession(read, write) as session:
                out = await exercise(session, "http")
                out["session_id"] = get_session_id()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
