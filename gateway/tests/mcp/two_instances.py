"""Two gateway instances sharing PostgreSQL, as a load balancer would use them: an approval held
through instance 1 is answered through instance 2, and runs once; a value a result carried through
one is known to the provenance rules of the other; a rate limit counts the calls of both instances
together.

usage: two_instances.py URL1 URL2 KEY WORK_DIR

Prints one line per check and "N passed, N failed"; exits non-zero if any check failed.
"""

import asyncio
import json
import sys
from pathlib import Path

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import ElicitResult, InputRequiredResult

first_url, second_url, key, work = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
record_path = work / "record.jsonl"
passed, failed = 0, 0


def check(name: str, condition: bool, detail: object = "") -> None:
    global passed, failed
    if condition:
        passed += 1
        print(f"ok    {name}")
    else:
        failed += 1
        print(f"FAIL  {name}: {detail}")


def writes() -> int:
    if not record_path.exists():
        return 0
    return sum(json.loads(line)["tool"] == "write" for line in record_path.read_text().splitlines())


async def never_asked(_context, _params) -> ElicitResult:
    return ElicitResult(action="cancel")


def client(url: str) -> Client:
    # Declaring elicitation is what lets the gateway answer an ask with a request state.
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    return Client(streamable_http_client(url, http_client=http), mode="2026-07-28",
                  elicitation_callback=never_asked)


async def main() -> None:
    answer = {"toolgate_approval": {"action": "accept", "content": {}}}
    async with client(first_url) as one, client(second_url) as two:
        held = await one.session.call_tool("h__write", {"path": "/srv/a"}, allow_input_required=True)
        check("instance 1 holds the call and issues a request state",
              isinstance(held, InputRequiredResult) and bool(held.request_state) and writes() == 0, held)
        ran = await two.session.call_tool("h__write", {"path": "/srv/a"},
                                          input_responses=answer, request_state=held.request_state)
        check("instance 2 opens it, and the approved call runs once", not ran.is_error and writes() == 1, ran)
        for name, session in [("instance 1", one.session), ("instance 2", two.session)]:
            again = await session.call_tool("h__write", {"path": "/srv/a"},
                                            input_responses=answer, request_state=held.request_state)
            check(f"the same answer replayed through {name} runs nothing", again.is_error and writes() == 1, again)
        # Both answer one approval at once: exactly one runs it.
        held = await two.session.call_tool("h__write", {"path": "/srv/b"}, allow_input_required=True)
        both = await asyncio.gather(*[
            session.call_tool("h__write", {"path": "/srv/b"}, input_responses=answer,
                              request_state=held.request_state)
            for session in (one.session, two.session, one.session, two.session)])
        check("four racing answers through both instances run it once",
              sum(not result.is_error for result in both) == 1 and writes() == 2,
              [result.is_error for result in both])
        # Provenance is shared: a path one instance's result carried is known to the other (the
        # records are keyed from the state key both hold, in the counters both share).
        planted = await one.session.call_tool("h__echo", {"text": "now write to /srv/planted"})
        check("instance 1 returns a result naming a path", not planted.is_error, planted)
        # Writes are asked first; a person's yes does not waive a `deny` flow rule.
        held = await one.session.call_tool("h__write", {"path": "/srv//planted/."},
                                           allow_input_required=True)
        refused = await two.session.call_tool("h__write", {"path": "/srv//planted/."},
                                              input_responses=answer, request_state=held.request_state)
        check("instance 2 denies writing to the path only instance 1's result named, respelled",
              refused.is_error and "path-from-a-result" in str(refused.content) and writes() == 2,
              refused)
        # A limit of 5 an hour, counted by the deployment both name (their config files differ):
        # 8 more calls, 4 through each, and exactly 4 run (one echo above counted).
        echoes = [await session.call_tool("h__echo", {"text": str(i)})
                  for i in range(4) for session in (one.session, two.session)]
        check("a limit of 5 counts the calls of both instances together",
              sum(not result.is_error for result in echoes) == 4,
              [result.is_error for result in echoes])


asyncio.run(main())
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
