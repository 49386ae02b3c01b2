"""A real MCP client (PyPI's `mcp`, the protocol's Python SDK) for tests/integration/mcp.rs.

    python mcp_client.py stdio APP EXECUTOR -- COMMAND ARGS...
    python mcp_client.py http APP EXECUTOR URL

Lists the tools, calls each (list_apps; app_verdict, executor_verdict, timeline and report for
APP, executor_verdict again with the id as a string; explain_pod for the executor's pod, as
executor_verdict named it; one call of an unknown app), and prints one JSON document:
{"server_info": {"name", "version"}, "tools": [names], "calls": {key: {"error": bool, "text": str}}}.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def exercise(read, write, app, executor):
    out = {"tools": [], "calls": {}}
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        out["server_info"] = {"name": init.server_info.name, "version": init.server_info.version}
        tools = await session.list_tools()
        out["tools"] = sorted(t.name for t in tools.tools)

        async def call(key, name, args):
            r = await session.call_tool(name, args)
            out["calls"][key] = {"error": bool(r.is_error), "text": text_of(r)}
            return out["calls"][key]

        await call("list_apps", "list_apps", {})
        await call("app_verdict", "app_verdict", {"app": app})
        ex = await call("executor_verdict", "executor_verdict", {"app": app, "executor": executor})
        # Agents send ids as strings as often as numbers.
        await call("executor_verdict_str", "executor_verdict", {"app": app, "executor": str(executor)})
        pod = json.loads(ex["text"])["pod"] if not ex["error"] else "none"
        await call("explain_pod", "explain_pod", {"pod": pod})
        await call("timeline", "timeline", {"app": app, "limit": 50})
        await call("report", "report", {"app": app})
        await call("no_such_app", "app_verdict", {"app": "no-such-app"})
    return out


async def main():
    mode, app, executor = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "stdio":
        rest = sys.argv[sys.argv.index("--") + 1:]
        params = StdioServerParameters(command=rest[0], args=rest[1:])
        async with stdio_client(params) as streams:
            out = await exercise(streams[0], streams[1], app, executor)
    else:
        async with streamable_http_client(sys.argv[4]) as streams:
            out = await exercise(streams[0], streams[1], app, executor)
    print(json.dumps(out))


asyncio.run(main())
