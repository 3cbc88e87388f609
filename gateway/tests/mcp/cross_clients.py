"""What an upstream sends that names no request — a log message, a sampling request — reaches only
the client whose request it came during, and nobody when that cannot be told.

Two clients of the gateway over Streamable HTTP (two API keys) in front of
tests/mcp/everything_upstream.mjs, sampling forwarded: `bob` waits on `slow_wait` while `alice`
reads `test://noisy`, whose read logs and asks the client's model. With two requests waiting on the
upstream, neither client gets the log or the sampling request (the upstream is refused). Nor
does bob get a line the upstream logs about alice's call after answering it, while bob's call is
the one waiting. Then `alice` reads alone, once no other principal's call ended within 10 s: the
log and the sampling request are hers.

usage: cross_clients.py URL ALICE_KEY BOB_KEY
"""

import asyncio
import sys

from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from targets import Checks

url, alice_key, bob_key = sys.argv[1:4]
check = Checks("legacy")


class Seen:
    def __init__(self) -> None:
        self.logs: list[object] = []
        self.sampled: list[str] = []

    async def sampling(self, context, params: types.CreateMessageRequestParams):
        self.sampled.append(params.messages[0].content.text)
        return types.CreateMessageResult(role="assistant", model="m", stop_reason="endTurn",
                                         content=types.TextContent(type="text", text="sampled"))

    async def logging(self, params: types.LoggingMessageNotificationParams):
        self.logs.append(params.data)


def client(key: str, seen: Seen) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    return Client(streamable_http_client(url, http_client=http), mode="legacy",
                  sampling_callback=seen.sampling, logging_callback=seen.logging)


async def main() -> None:
    alice, bob = Seen(), Seen()
    async with client(alice_key, alice) as a, client(bob_key, bob) as b:
        # The upstream logs about alice's call after answering it, while bob's is the one call
        # waiting: the line is alice's, and another principal's call ended just before, so it is
        # nobody's (bob got it, before; an independent attack).
        waiting = asyncio.create_task(b.call_tool("slow_wait", {}))
        await asyncio.sleep(0.2)
        answered = await a.call_tool("trailing_log", {})
        await waiting
        check("alice's call answered", not answered.is_error, answered)
        check("bob got no trailing log of alice's call",
              not any("trailing" in str(log) for log in bob.logs), bob.logs)
        waiting = asyncio.create_task(b.call_tool("slow_wait", {}))
        await asyncio.sleep(0.4)
        read = await a.read_resource("test://noisy")
        await waiting
        text = read.contents[0].text
        check("with two requests waiting, the upstream's sampling request is refused",
              "refused" in text, text)
        check("bob got no log of alice's read", bob.logs == [], bob.logs)
        check("bob was asked nothing for alice's read", bob.sampled == [], bob.sampled)
        check("alice got no log either (it could have been bob's)", alice.logs == [], alice.logs)
        # Alone, once no other principal's call ended within the gateway's 10 s: before that, what
        # names no call may be about that call, and goes to nobody.
        read = await a.read_resource("test://noisy")
        text = read.contents[0].text
        check("alone just after bob's call, alice's read is not sampled", "refused" in text, text)
        await asyncio.sleep(10.5)
        alice.logs.clear()
        read = await a.read_resource("test://noisy")
        text = read.contents[0].text
        check("alone, alice's read is sampled by her client", text == "noisy (sampled)", text)
        check("alone, the log of alice's read is hers", alice.logs == ["reading test://noisy"],
              alice.logs)
        check("and bob still got nothing", bob.logs == [] and bob.sampled == [],
              [bob.logs, bob.sampled])
        # Alice's call passes the gateway's bound (1 s) while the upstream works on: what it sends
        # later is nobody's, not bob's, though bob's is then the only call claimed.
        late = await a.call_tool("late_log", {})
        check("alice's call passed its bound", late.is_error, late)
        await b.call_tool("slow_wait", {})
        check("the late log of alice's call did not reach bob",
              not any("late" in str(log) for log in bob.logs), bob.logs)
    check.done()


asyncio.run(main())
