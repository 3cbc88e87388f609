"""What an upstream sends while its tool runs — progress messages, log messages — is judged as
its result is, through toolgate-mcp-gateway, with the official Python SDK's client: a cloud key a
result rule redacts arrives redacted, a private key a rule withholds never arrives, and an IBAN a
progress message named counts as seen in that tool's results (a provenance rule denies paying it);
a sampling request the upstream makes about a private key is not put to the client's model.
Directly, the upstream's own messages carry all three (the checks would catch nothing otherwise).

usage: interim.py TARGETS_JSON   (TARGETS_JSON as in targets.py; legacy revision: it has logging)
Prints one line per check and "N passed, N failed"; exits non-zero if any check failed.
"""

import asyncio
import json
import sys

import mcp_types as types

from targets import Checks, gateway_client, stdio

CLOUD_KEY = "AKIAIOSFODNN7EXAMPLE"
PRIVATE_KEY = "BEGIN RSA PRIVATE KEY"
IBAN = "DE44500105175407324931"

targets = json.loads(sys.argv[1])
check = Checks("legacy")


async def run(client_of, via: str) -> tuple[list, list, object]:
    progress, logs, sampled = [], [], []

    async def on_progress(step, total, message):
        progress.append((step, message))

    async def on_log(params):
        data = params.data if isinstance(params.data, str) else json.dumps(params.data)
        logs.append(f"{data} (logger {params.logger})")

    async def on_sampling(context, params):
        sampled.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", model="test-model", stop_reason="endTurn",
            content=types.TextContent(type="text", text="the client's model answers"))

    async with client_of(on_log, on_sampling) as client:
        result = await client.call_tool("work", {}, progress_callback=on_progress)
        check(f"{via}: the tool runs", not result.is_error, result)
        # Log messages may trail the result a little.
        for _ in range(30):
            if any("finished" in line for line in logs):
                break
            await asyncio.sleep(0.1)
        paid = await client.call_tool("pay", {"iban": IBAN})
        other = await client.call_tool("pay", {"iban": "GB82WEST12345698765432"})
        summary = await client.call_tool("summarize", {})
        asked = await client.call_tool("ask", {})
    return progress, logs, (paid, other, summary, asked, sampled)


def client_of(target):
    def make(on_log, on_sampling):
        client = target()
        client.logging_callback = on_log
        client.sampling_callback = on_sampling
        return client

    return make


async def main() -> None:
    progress, logs, (_, _, _, _, sampled) = await run(
        client_of(lambda: stdio(targets["direct"], "legacy")), "directly"
    )
    said = " ".join(str(message) for _, message in progress) + " " + " ".join(logs) + " ".join(sampled)
    check("directly: the upstream's messages carry both keys", CLOUD_KEY in said and PRIVATE_KEY in said, said)
    check("directly: its sampling request carries the private key", any(PRIVATE_KEY in text for text in sampled),
          sampled)

    progress, logs, (paid, other, summary, asked, sampled) = await run(
        client_of(lambda: gateway_client(targets, "legacy")), "through the gateway"
    )
    messages = [message for _, message in progress if message]
    said = " ".join(messages) + " " + " ".join(logs)
    check("through the gateway: no cloud key reaches the client", CLOUD_KEY not in said, said)
    check("through the gateway: no private key reaches the client", PRIVATE_KEY not in said, said)
    check("through the gateway: the redacted progress message still arrives",
          any(message.startswith("found the key") for message in messages), progress)
    check("through the gateway: the progress whose message is withheld still arrives, without it",
          (2, None) in progress, progress)
    check("through the gateway: a progress whose number is a card number does not arrive",
          not any(step == 4111111111111111 for step, _ in progress), progress)
    check("through the gateway: the redacted log message still arrives",
          any(line.startswith("key in use:") for line in logs), logs)
    check("through the gateway: the withheld log message does not", not any("key file" in line for line in logs), logs)
    check("through the gateway: a log message from a logger named with a key arrives, the name redacted",
          any(line.startswith("named logger (logger svc-") for line in logs), logs)
    check("through the gateway: an IBAN a progress message named is seen in the tool's results",
          paid.is_error, paid)
    check("through the gateway: one nothing named is not", not other.is_error, other)
    check("through the gateway: a sampling request carrying a private key is not put to the client",
          not any(PRIVATE_KEY in text for text in sampled) and "refused" in str(summary), (sampled, summary))
    check("through the gateway: a plain one is", "What day is it?" in sampled and "the client's model answers"
          in str(asked), (sampled, asked))
    check.done()


asyncio.run(main())
