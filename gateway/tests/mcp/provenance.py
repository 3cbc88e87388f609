"""Drives toolgate-mcp-gateway with the official Python MCP SDK's client through an attack that
comes back in a tool result: a mail carries an attacker's IBAN and link; the policy asks before
a payee the person did not name and before a message carrying a link only untrusted content
named. The person's request reaches the gateway in `_meta["dev.toolgate/personRequest"]`.

usage: provenance.py GATEWAY_BINARY WORK_DIR MODE      (MODE: legacy | 2026-07-28)

Prints one line per check and "N passed, N failed"; exits non-zero if any check failed.
"""

import asyncio
import json
import os
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ElicitResult

HERE = Path(__file__).resolve().parent
PERSON = "dev.toolgate/personRequest"
ATTACKER_IBAN = "DE89370400440532013000"
PAYEE_IBAN = "GB82WEST12345698765432"
PERSONS_IBAN = "FR1420041010050500013M02606"

gateway, work, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
work.mkdir(parents=True, exist_ok=True)
record_path = work / "record.jsonl"
policy_path = work / "policy.json"
audit_path = work / "audit.jsonl"
log_path = work / "gateway.log"
for path in (record_path, audit_path, log_path):
    path.unlink(missing_ok=True)
record_path.touch()
policy_path.write_text(json.dumps({
    "rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "the flows decide"}],
    "sources": {"trusted": ["list_payees"]},
    "flows": [
        {"id": "payee-not-from-person", "tool": "send_money", "action": "ask",
         "reason": "a payee you did not name and no trusted list holds",
         "provenance": {"pointer": "/iban", "not_seen_in": ["person", "trusted"]}},
        {"id": "link-from-untrusted", "tool": "post", "action": "ask",
         "reason": "the message carries a link from content someone else wrote",
         "provenance": {"pointer": "/body", "read": "tokens", "seen_in": ["untrusted"],
                        "not_seen_in": ["person"]}},
    ],
}), encoding="utf-8")

passed, failed = 0, 0
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


async def person(_context, params) -> ElicitResult:
    # The person is asked and declines: what a held call leads to when nobody approves.
    asked.append(params.message)
    return ElicitResult(action="decline")


async def call(client: Client, tool: str, arguments: dict, meta: dict | None = None):
    """A tool call; a protocol error counts as a refusal (returned as None)."""
    try:
        return await client.call_tool(tool, arguments, meta=meta)
    except Exception as error:  # noqa: BLE001 - any refusal is fine here, the record decides
        print(f"      ({tool}: protocol error {type(error).__name__})")
        return None


def refused(result) -> bool:
    return result is None or bool(result.is_error)


def ran(result) -> bool:
    return result is not None and not result.is_error


async def main() -> None:
    # At the debug level, its log kept in a file: no value a call, a result or the person's
    # request carried may reach it.
    params = StdioServerParameters(
        command="/bin/sh",
        args=["-c", 'exec "$0" "$@" 2>>"$GATEWAY_LOG"', gateway,
              "--policy", str(policy_path), "--audit", str(audit_path), "--",
              sys.executable, str(HERE / "provenance_upstream.py")],
        env={**os.environ, "TOOLGATE_MCP_RECORD": str(record_path),
             "TOOLGATE_LOG": "debug", "GATEWAY_LOG": str(log_path)},
    )
    async with Client(params, mode=mode, elicitation_callback=person) as client:
        mail = await call(client, "read_mail", {})
        check("the mail is read", ran(mail), mail)

        held = await call(client, "send_money", {"iban": ATTACKER_IBAN, "cents": 99000})
        check("a payee only the mail named is held, and not paid",
              refused(held) and records("send_money") == [], held)
        if mode == "legacy":
            check("the person was asked, naming the rule's reason",
                  len(asked) == 1 and "a payee you did not name" in asked[0], asked)

        payees = await call(client, "list_payees", {})
        check("the trusted list is read", ran(payees), payees)
        paid = await call(client, "send_money", {"iban": PAYEE_IBAN, "cents": 100})
        check("a payee of the trusted list is paid", ran(paid)
              and [r["arguments"]["iban"] for r in records("send_money")] == [PAYEE_IBAN], paid)

        unnamed = await call(client, "send_money", {"iban": PERSONS_IBAN, "cents": 1})
        check("a payee nobody named is held", refused(unnamed) and len(records("send_money")) == 1,
              unnamed)
        named = await call(client, "send_money", {"iban": PERSONS_IBAN, "cents": 1},
                           meta={PERSON: "please pay my rent to FR14 2004 1010 0505 0001 3M02 606"})
        check("the payee the person named (in _meta) is paid", ran(named)
              and records("send_money")[-1]["arguments"]["iban"] == PERSONS_IBAN, named)

        bad = await call(client, "send_money", {"iban": PERSONS_IBAN, "cents": 2}, meta={PERSON: 42})
        check("a person's request that is not text is refused, nothing runs",
              refused(bad) and len(records("send_money")) == 2, bad)

        link = await call(client, "post", {"body": "New wiki: HTTPS://EVIL.EXAMPLE/login?next=%2fhome."})
        check("a message carrying the mail's link, respelled, is held", refused(link)
              and records("post") == [], link)
        plain = await call(client, "post", {"body": "Lunch at noon?"})
        check("a message without links is posted", ran(plain) and len(records("post")) == 1,
              plain)

    audit = audit_path.read_text(encoding="utf-8")
    check("the audit log holds no IBAN the calls carried",
          all(value not in audit for value in (ATTACKER_IBAN, PERSONS_IBAN, "FR14 2004")), "")
    check("the audit log names the provenance rule that held the payment",
          "payee-not-from-person" in audit, "")
    log = log_path.read_text(encoding="utf-8")
    check("the gateway's log was kept", "serving MCP over stdio" in log, log[-2000:])
    leaked = [value for value in (ATTACKER_IBAN, PERSONS_IBAN, PAYEE_IBAN, "DE89 3704", "FR14 2004",
                                  "pay my rent", "evil.example", "EVIL.EXAMPLE", "Lunch at noon")
              if value in log]
    check("the debug log holds no value a call, a result or the person's request carried",
          leaked == [], leaked)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


asyncio.run(main())
