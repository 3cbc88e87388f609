"""Drives toolgate-mcp-gateway with the official Python MCP SDK's client, in one protocol mode.

usage: client.py GATEWAY_BINARY WORK_DIR MODE      (MODE: legacy | 2026-07-28)

The gateway fronts tests/mcp/upstream_server.py (started with this same Python), whose record of
received calls proves what reached it. Prints one line per check and "N passed, N failed"; exits
non-zero if any check failed.
"""

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ElicitResult, InputRequiredResult

HERE = Path(__file__).resolve().parent
SECRET = "s3cret-token-4711"

gateway, work, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
work.mkdir(parents=True, exist_ok=True)
record_path = work / "record.jsonl"
policy_path = work / "policy.json"
audit_path = work / "audit.jsonl"
for path in (record_path, audit_path):
    path.unlink(missing_ok=True)
record_path.touch()
shutil.copy(HERE / "policy.json", policy_path)

passed, failed = 0, 0
answers: list[str] = []  # what the "person" answers next; empty means no question expected
asked: list[str] = []


def check(name: str, condition: bool, detail: object = "") -> None:
    global passed, failed
    if condition:
        passed += 1
        print(f"ok    {mode} {name}")
    else:
        failed += 1
        print(f"FAIL  {mode} {name}: {detail}")


def records(tool: str) -> list[dict]:
    lines = record_path.read_text(encoding="utf-8").splitlines()
    return [entry for entry in map(json.loads, lines) if entry["tool"] == tool]


def text(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def person(_context, params) -> ElicitResult:
    asked.append(params.message)
    action = answers.pop(0) if answers else "cancel"
    return ElicitResult(action=action, content={} if action == "accept" else None)


async def call(client: Client, tool: str, arguments: dict):
    """A tool call; a protocol error counts as a refusal (returned as None)."""
    try:
        return await client.call_tool(tool, arguments)
    except Exception as error:  # noqa: BLE001 - any refusal is fine here, the record decides
        print(f"      ({tool}: protocol error {type(error).__name__})")
        return None


def refused(result) -> bool:
    return result is None or bool(result.is_error)


async def listed(client: Client) -> list[str]:
    return sorted(tool.name for tool in (await client.list_tools(cache_mode="bypass")).tools)


async def main() -> None:
    params = StdioServerParameters(
        command=gateway,
        args=["--policy", str(policy_path), "--audit", str(audit_path), "--",
              sys.executable, str(HERE / "upstream_server.py")],
        env={**os.environ, "TOOLGATE_MCP_RECORD": str(record_path)},
    )
    async with Client(params, mode=mode, elicitation_callback=person) as client:
        check("negotiated revision", client.protocol_version == ("2025-11-25" if mode == "legacy" else mode),
              client.protocol_version)
        check("list hides the denied tool", await listed(client) == ["crash", "echo", "stats", "write_file"])
        tools = {tool.name: tool for tool in (await client.list_tools(cache_mode="bypass")).tools}
        check("the upstream's output schema is listed", (tools["stats"].output_schema or {}).get("required")
              == ["length", "words"], tools["stats"].output_schema)
        result = await call(client, "stats", {"text": "two words"})
        check("structured content is checked and passed on", result is not None and not result.is_error
              and result.structured_content == {"length": 9, "words": 2}, result)

        result = await call(client, "echo", {"text": "hi"})
        # The SDK declares an output schema for `-> str` ({"result": …}): the checked value is
        # passed on, its JSON as the text (as MCP recommends for structured results).
        check("allowed call reaches upstream", result is not None
              and result.structured_content == {"result": "echo: hi"}
              and len(records("echo")) == 1, result)
        check("a look-alike upstream name is not served (and kept no other tool out)",
              refused(await call(client, "Echo", {"text": "hi"})) and records("Echo") == [])

        for tool, arguments in [("shell", {"command": SECRET}), ("no_such_tool", {}),
                                ("echo", {"text": 5}), ("echo", {}),
                                ("write_file", {"path": SECRET})]:
            check(f"{tool} {sorted(arguments)} refused", refused(await call(client, tool, arguments)))
        check("denied, unknown, invalid never reach upstream",
              records("shell") == [] and len(records("echo")) == 1 and records("write_file") == [],
              record_path.read_text())

        # A lying readOnlyHint grants nothing: write_file still asks.
        answers[:] = ["accept"]
        result = await call(client, "write_file", {"path": "/tmp/a", "content": "abc"})
        check("ask -> input requested -> accept runs exactly once",
              len(asked) == 1 and "write_file" in asked[0] and "/tmp/a" in asked[0]
              and result is not None and not result.is_error and len(records("write_file")) == 1,
              (asked, result))
        for answer in ("decline", "cancel"):
            answers[:] = [answer]
            result = await call(client, "write_file", {"path": "/tmp/b", "content": "x"})
            check(f"ask -> {answer} -> not run", refused(result) and len(records("write_file")) == 1, result)

        if mode != "legacy":
            first = await client.session.call_tool("write_file", {"path": "/tmp/c", "content": "c"},
                                                   allow_input_required=True)
            check("input_required carries a request state", isinstance(first, InputRequiredResult)
                  and bool(first.request_state), first)
            responses = {"toolgate_approval": {"action": "accept", "content": {}}}
            state = first.request_state
            ran = await client.session.call_tool("write_file", {"path": "/tmp/c", "content": "c"},
                                                 input_responses=responses, request_state=state)
            replayed = await client.session.call_tool("write_file", {"path": "/tmp/c", "content": "c"},
                                                      input_responses=responses, request_state=state)
            altered = await client.session.call_tool("write_file", {"path": "/tmp/d", "content": "c"},
                                                     input_responses=responses, request_state=state)
            check("the genuine retry runs once", not ran.is_error, ran)
            check("a replayed or re-targeted request state is refused",
                  replayed.is_error and altered.is_error
                  and [r["arguments"]["path"] for r in records("write_file")] == ["/tmp/a", "/tmp/c"],
                  (replayed, altered))

        # A policy file that does not load leaves the policy in force; one that loads replaces it.
        policy_path.write_text("{ not json", encoding="utf-8")
        await asyncio.sleep(1.6)
        result = await call(client, "echo", {"text": "still"})
        check("a broken policy file is not applied", result is not None and not result.is_error, result)
        policy = json.loads((HERE / "policy.json").read_text(encoding="utf-8"))
        policy["rules"] = [rule for rule in policy["rules"] if rule["tool"] != "echo"]
        policy_path.write_text(json.dumps(policy), encoding="utf-8")
        await asyncio.sleep(1.6)
        result = await call(client, "echo", {"text": "after"})
        check("a policy file that loads whole is applied without restart",
              refused(result) and await listed(client) == ["crash", "stats", "write_file"], result)

        result = await call(client, "crash", {})
        check("an upstream crash gives an error result", refused(result), result)
        result = await call(client, "write_file", {"path": "/tmp/e", "content": "e"})
        check("the gateway keeps serving after the upstream crashed",
              await listed(client) == ["crash", "stats", "write_file"], result)

    audit = audit_path.read_text(encoding="utf-8")
    check("the audit log records the calls", audit.count("\n") >= 10, audit.count("\n"))
    check("the audit log holds no argument value", SECRET not in audit and "/tmp/a" not in audit)


asyncio.run(main())
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
