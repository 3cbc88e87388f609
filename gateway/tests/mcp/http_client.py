"""Drives `toolgate-mcp-gateway serve` over Streamable HTTP with the official Python MCP SDK's
client, as two principals, in one protocol mode.

usage: http_client.py URL ALICE_KEY BOB_KEY WORK_DIR MODE      (MODE: legacy | 2026-07-28)

The gateway fronts tests/mcp/hostile_upstream.py in its normal mode; its record of received calls
(WORK_DIR/record.jsonl) proves what reached it, and WORK_DIR/audit.jsonl what the gateway saw.
Alice is in group `ops`, Bob in `dev`. Prints one line per check and "N passed, N failed"; exits
non-zero if any check failed.
"""

import asyncio
import json
import sys
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import ElicitResult, InputRequiredResult

url, alice_key, bob_key, work, mode = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), sys.argv[5]
record_path = work / "record.jsonl"
passed, failed = 0, 0
answers: list[str] = []


def check(name: str, condition: bool, detail: object = "") -> None:
    global passed, failed
    if condition:
        passed += 1
        print(f"ok    {mode} {name}")
    else:
        failed += 1
        print(f"FAIL  {mode} {name}: {detail}")


def records(tool: str) -> list[dict]:
    if not record_path.exists():
        return []
    lines = record_path.read_text(encoding="utf-8").splitlines()
    return [entry for entry in map(json.loads, lines) if entry["tool"] == tool]


def text(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def person(_context, params) -> ElicitResult:
    action = answers.pop(0) if answers else "cancel"
    return ElicitResult(action=action, content={} if action == "accept" else None)


def client_for(key: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    return Client(streamable_http_client(url, http_client=http), mode=mode, elicitation_callback=person)


async def raw_post(headers: dict, body: str) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.post(url, content=body, headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
            **headers,
        })


async def main() -> None:
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    for name, headers in [("no key", {}), ("a wrong key", {"authorization": "Bearer tg_wrong"}),
                          ("a key in another scheme", {"authorization": f"Basic {alice_key}"})]:
        response = await raw_post(headers, initialize)
        check(f"{name} gets 401 and nothing else", response.status_code == 401
              and "www-authenticate" in response.headers and "jsonrpc" not in response.text,
              (response.status_code, response.text[:200]))

    duplicated = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "h__echo", "arguments": {"text": "a"}}})
    duplicated = duplicated.replace('{"text": "a"}', '{"text": "a", "text": "b"}')
    response = await raw_post({"authorization": f"Bearer {alice_key}"}, duplicated)
    check("a body with a duplicate key is refused before the SDK reads it",
          response.status_code == 400 and "duplicate key" in response.text, (response.status_code, response.text))
    # A JSON body cut short: the protocol's parse error (400, -32700, no id), not the SDK's 415.
    response = await raw_post({"authorization": f"Bearer {alice_key}"}, duplicated[:40])
    answer = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    check("a body that is not JSON gets a JSON-RPC parse error",
          response.status_code == 400 and answer.get("error", {}).get("code") == -32700
          and answer.get("id", "absent") is None and "h__echo" not in response.text,
          (response.status_code, response.text))

    async with client_for(alice_key) as alice, client_for(bob_key) as bob:
        expected = ["2025-11-25"] if mode == "legacy" else [mode]
        check("negotiated revision", alice.protocol_version in expected, alice.protocol_version)
        result = await alice.call_tool("h__echo", {"text": "hi"})
        check("alice (ops) may echo", not result.is_error and text(result) == "echo: hi", result)
        result = await bob.call_tool("h__echo", {"text": "hi"})
        check("bob (dev) may not: the rule names ops", result.is_error and len(records("echo")) == 1, result)

        # Two sessions at once: calls in flight together, each answered to its own caller.
        results = await asyncio.gather(*[alice.call_tool("h__echo", {"text": f"n{n}"}) for n in range(8)])
        check("eight concurrent calls, each answered with its own text",
              [text(result) for result in results] == [f"echo: n{n}" for n in range(8)], results)

        if mode != "legacy":
            first = await alice.session.call_tool("h__write", {"path": "/tmp/x"}, allow_input_required=True)
            check("an ask gives alice a request state", isinstance(first, InputRequiredResult)
                  and bool(first.request_state), first)
            responses = {"toolgate_approval": {"action": "accept", "content": {}}}
            stolen = await bob.session.call_tool("h__write", {"path": "/tmp/x"},
                                                 input_responses=responses, request_state=first.request_state)
            check("bob cannot answer alice's approval with her request state",
                  stolen.is_error and records("write") == [], stolen)
            ran = await alice.session.call_tool("h__write", {"path": "/tmp/x"},
                                                input_responses=responses, request_state=first.request_state)
            check("alice's own retry runs it once", not ran.is_error and len(records("write")) == 1, ran)
        else:
            answers[:] = ["accept"]
            ran = await alice.call_tool("h__write", {"path": "/tmp/x"})
            check("an ask is answered in the same request and runs once",
                  not ran.is_error and len(records("write")) == 1, ran)

    audit = (work / "audit.jsonl").read_text(encoding="utf-8")
    principals = {json.loads(line)["event"].get("principal") for line in audit.splitlines()}
    check("every audit event names its principal", principals == {"alice", "bob"}, principals)
    approvers = [(event["kind"], event.get("approver"))
                 for event in (json.loads(line)["event"] for line in audit.splitlines())
                 if event["kind"] in ("approval_approved", "approval_rejected")]
    check("the person who answered at the client is recorded as the approver",
          approvers == [("approval_approved", "alice")], approvers)


asyncio.run(main())
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
