"""An upstream serving one domain of the injection catalogue (tests/injection/DOMAIN.json) with the
official Python SDK's low-level server: each tool as the catalogue declares it, returning what
the RESULTS_FILE holds for it now (text, or structured content for an object; "ok" if nothing).
Every call that reaches it is appended to RECORD_FILE.

usage: injection_upstream.py DOMAIN_FILE RESULTS_FILE RECORD_FILE
"""

import json
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

domain_file, results_file, record_file = sys.argv[1], sys.argv[2], sys.argv[3]
with open(domain_file, encoding="utf-8") as file:
    DOMAIN = json.load(file)


async def list_tools(_context, _params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[
        types.Tool(name=tool["name"], description=tool["description"], input_schema=tool["schema"])
        for tool in DOMAIN["tools"]])


async def call_tool(_context, params) -> types.CallToolResult:
    with open(record_file, "a", encoding="utf-8") as file:
        file.write(json.dumps({"tool": params.name, "arguments": params.arguments or {}}) + "\n")
    with open(results_file, encoding="utf-8") as file:
        result = json.load(file).get(params.name, "ok")
    if isinstance(result, dict):
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result))],
            structured_content=result)
    return types.CallToolResult(content=[types.TextContent(type="text", text=result)])


server = Server("injection-upstream", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
