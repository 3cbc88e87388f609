"""Progress and cancellation through toolgate-mcp-gateway, with the official Python MCP SDK's
client: the progress tests/mcp/rich_upstream.py reports for a call (`count`) reaches the client
that made it, under its own token, as it does directly; a call the client gives up on (`wait`,
abandoned past its read timeout, which sends `notifications/cancelled`) is cancelled upstream,
as it is directly (the upstream records it).

usage: progress_cancel.py MODE RECORD TARGETS_JSON      (MODE: legacy | 2026-07-28)
TARGETS_JSON: {"direct": [ARGV…], "gateway": {"stdio": [ARGV…]} | {"http": URL, "key": KEY}}
Prints one line per check and "N passed, N failed"; exits non-zero if any check failed.
"""

import asyncio
import json
import sys
from pathlib import Path

from mcp import Client

from targets import Checks, gateway_client, stdio

mode, record, targets = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
check = Checks(mode)
ENV = {"TOOLGATE_MCP_RECORD": str(record), "PATH": "/usr/bin:/bin"}


def cancellations() -> int:
    if not record.exists():
        return 0
    return sum(1 for line in record.read_text().splitlines() if json.loads(line).get("cancelled"))


async def progress_and_cancel(client: Client, via: str) -> None:
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    result = await client.call_tool("count", {}, progress_callback=on_progress)
    sent = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    if via == "directly":
        check(f"{via}: the upstream reports three steps", seen == sent and not result.is_error, (seen, result))
    else:
        # The gateway's SDK hears each notification on a task of its own: one overtaken by a later
        # one is dropped, so the client never sees progress go back (the protocol forbids it).
        check(f"{via}: the call's progress reaches its client, never going back",
              bool(seen) and all(entry in sent for entry in seen)
              and [entry[0] for entry in seen] == sorted({entry[0] for entry in seen})
              and not result.is_error, (seen, result))
    before = cancellations()
    try:
        await client.call_tool("wait", {}, read_timeout_seconds=1)
        check(f"{via}: an abandoned call ends", False, "it returned")
    except Exception:  # noqa: BLE001 - the SDK raises on its read timeout
        pass
    for _ in range(50):
        if cancellations() > before:
            break
        await asyncio.sleep(0.1)
    check(f"{via}: a call its client cancels is cancelled upstream", cancellations() == before + 1,
          record.read_text() if record.exists() else "")
    result = await client.call_tool("count", {})
    check(f"{via}: the session serves on after a cancellation", not result.is_error, result)


async def main() -> None:
    async with stdio(targets["direct"], mode, ENV) as client:
        await progress_and_cancel(client, "directly")
    async with gateway_client(targets, mode, ENV) as client:
        await progress_and_cancel(client, "through the gateway")
    check.done()


asyncio.run(main())
