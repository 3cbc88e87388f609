"""Calls every tool of tests/mcp/rich_upstream.py directly and through toolgate-mcp-gateway with
the official Python MCP SDK's client, and checks that the gateway changed nothing: the listed
tools and every result — each content block with its annotations and `_meta`, structuredContent,
isError and the result's `_meta` — are equal, except the documented changes (a result's
`_meta` keys under `dev.toolgate/` are toolgate's own and are not passed on).

usage: transparency.py MODE TARGETS_JSON      (MODE: legacy | 2026-07-28)
TARGETS_JSON: {"direct": [ARGV…], "gateway": {"stdio": [ARGV…]} | {"http": URL, "key": KEY}}
Prints one line per check and "N passed, N failed"; exits non-zero if any check failed.
"""

import asyncio
import json
import sys

from mcp import Client

from targets import Checks, gateway_client, stdio

mode, targets = sys.argv[1], json.loads(sys.argv[2])
check = Checks(mode)
TOOLS = {"picture": {}, "sound": {}, "link": {}, "embedded": {}, "failing": {}, "with_meta": {},
         "read_file": {"path": "/a.txt"}, "mixed": {}, "empty": {}}


# Keys that describe the hop, not the tool's answer: on 2026-07-28 a server names itself in each
# result's `_meta`. Directly that is the upstream; through the gateway, the server the client talks
# to is the gateway, whose SDK sets (or leaves out) its own.
HOP_KEYS = ("io.modelcontextprotocol/serverInfo",)


def dump(model) -> dict:
    value = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    meta = {key: item for key, item in value.get("_meta", {}).items() if key not in HOP_KEYS}
    value.pop("_meta", None)
    if meta:
        value["_meta"] = meta
    return value


async def everything(client: Client) -> tuple[dict, dict]:
    tools = {tool.name: dump(tool) for tool in (await client.list_tools()).tools}
    results = {name: dump(await client.call_tool(name, arguments)) for name, arguments in TOOLS.items()}
    return tools, results


async def main() -> None:
    async with stdio(targets["direct"], mode) as client:
        direct_tools, direct = await everything(client)
    async with gateway_client(targets, mode) as client:
        gateway_tools, through = await everything(client)

    for name in TOOLS:
        got = gateway_tools.get(name, {})
        want = direct_tools[name]
        check(f"{name} is listed as the upstream lists it",
              {key: got.get(key) for key in ("name", "description", "inputSchema", "outputSchema")}
              == {key: want.get(key) for key in ("name", "description", "inputSchema", "outputSchema")},
              (got, want))

    # The upstream sent what this test expects (so equality below means something).
    kinds = [block["type"] for block in direct["mixed"]["content"]]
    check("the upstream sends every block type", kinds == ["text", "image", "audio", "resource_link", "resource"],
          kinds)
    check("the upstream sends a result's _meta", direct["with_meta"].get("_meta", {}).get("example.com/trace")
          == "abc", direct["with_meta"])
    check("the upstream sends annotations and block _meta",
          direct["picture"]["content"][1].get("annotations", {}).get("priority") == 0.25
          and direct["picture"]["content"][1].get("_meta") == {"example.com/source": "camera"}, direct["picture"])

    for name in TOOLS:
        want = dict(direct[name])
        if name == "with_meta":
            # The one documented change: toolgate's own _meta namespace is not a tool's to set.
            want["_meta"] = {key: value for key, value in want["_meta"].items()
                             if not key.startswith("dev.toolgate/")}
        check(f"{name}: the result passes through unchanged", through[name] == want,
              {"gateway": through[name], "direct": want})

    check("read_file: the tool's own text is kept beside structuredContent",
          through["read_file"]["content"] == [{"type": "text", "text": "hello\n"}]
          and through["read_file"].get("structuredContent") == {"content": "hello\n"}, through["read_file"])
    check("failing: isError and the image are kept",
          through["failing"].get("isError") is True and through["failing"]["content"][1]["type"] == "image",
          through["failing"])
    check("with_meta: a forged approval id is not passed on, the rest of _meta is",
          through["with_meta"].get("_meta") == {"example.com/trace": "abc"}, through["with_meta"])

    check.done()


asyncio.run(main())
