"""Drives every message kind the gateway forwards beyond tools — resources (list, templates, read,
subscribe, unsubscribe), prompts (list, get), completions, logging, and an upstream's sampling and
elicitation requests — with the official Python MCP SDK's client against
tests/mcp/everything_upstream.mjs directly and through toolgate-mcp-gateway, and checks that the
answers are equal.

With "gated" in TARGETS_JSON the gateway's policy denies reading test://static-binary, asks before
getting test_prompt_with_image (this client's elicitation callback answers the approval question:
"approve" in TARGETS_JSON["approve"]) and denies the upstream's sampling requests; the checks are
then that exactly those differ, each saying why, and that nothing denied reached the client.

usage: forwarded.py MODE TARGETS_JSON      (MODE: legacy | 2026-07-28)
TARGETS_JSON: {"direct": [ARGV…], "gateway": {"stdio": [ARGV…]} | {"http": URL, "key": KEY},
               "gated": bool, "approve": bool}
"""

import asyncio
import json
import sys

from mcp import Client, types
from mcp.shared.exceptions import MCPError

from targets import Checks

mode, targets = sys.argv[1], json.loads(sys.argv[2])
gated, approve = targets.get("gated", False), targets.get("approve", True)
check = Checks(mode)
legacy = mode == "legacy"


def dump(model) -> dict:
    value = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    value.pop("_meta", None)
    return value


def answer(result) -> dict:
    """An elicitation tool's result, the object the upstream printed read as JSON: the SDK's
    typed model on the way (rmcp's, the gateway's) keeps an object's members, not their order."""
    value = dump(result)
    for block in value.get("content", []):
        head, _, tail = block.get("text", "").partition("content=")
        if tail:
            block["text"] = [head, json.loads(tail)]
    return value


class Seen:
    """What the client was asked and told during one session."""

    def __init__(self) -> None:
        self.sampled: list[str] = []
        self.elicited: list[str] = []
        self.approvals: list[str] = []
        self.logs: list[object] = []

    async def sampling(self, context, params: types.CreateMessageRequestParams):
        self.sampled.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", model="test-model", stop_reason="endTurn",
            content=types.TextContent(type="text", text="the client's model answers"))

    async def elicitation(self, context, params):
        # The gateway's own approval question, or the upstream's request passed on.
        if params.message.startswith("Allow the tool call "):
            self.approvals.append(params.message)
            return types.ElicitResult(action="accept" if approve else "decline", content={})
        self.elicited.append(params.message)
        return types.ElicitResult(action="accept",
                                  content={"username": "ada", "email": "ada@example.org"})

    async def logging(self, params: types.LoggingMessageNotificationParams):
        self.logs.append(params.data)


async def everything(client_of, seen: Seen) -> dict:
    out: dict = {}
    async with client_of(seen) as client:
        out["resources"] = sorted(r.uri for r in (await client.list_resources()).resources)
        out["templates"] = sorted(t.uri_template
                                  for t in (await client.list_resource_templates()).resource_templates)
        for uri in ["test://static-text", "test://static-binary", "test://template/7/data"]:
            try:
                out[f"read {uri}"] = dump(await client.read_resource(uri))
            except MCPError as error:
                out[f"read {uri}"] = {"error": error.error.message}
        if legacy:  # 2026-07-28 replaced subscriptions with `subscriptions/listen`
            await client.subscribe_resource("test://watched-resource")
            await client.unsubscribe_resource("test://watched-resource")
        out["prompts"] = sorted(p.name for p in (await client.list_prompts()).prompts)
        for name, arguments in [("test_simple_prompt", None),
                                ("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"}),
                                ("test_prompt_with_embedded_resource", {"resourceUri": "test://x"}),
                                ("test_prompt_with_image", None)]:
            try:
                out[f"prompt {name}"] = dump(await client.get_prompt(name, arguments))
            except MCPError as error:
                out[f"prompt {name}"] = {"error": error.error.message}
        completion = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data"),
            {"name": "id", "value": "4"})
        out["completion"] = sorted(completion.completion.values)
        if legacy:
            await client.set_logging_level("info")
            out["logging result"] = dump(await client.call_tool("test_tool_with_logging", {}))
            # A level above the messages': none of the next call's reach the client.
            heard = len(seen.logs)
            await client.set_logging_level("error")
            await client.call_tool("test_tool_with_logging", {})
            out["logs above the level"] = seen.logs[heard:]
            await client.set_logging_level("info")
            out["sampling result"] = dump(await client.call_tool("test_sampling",
                                                                 {"prompt": "a question"}))
            out["elicitation result"] = answer(await client.call_tool("test_elicitation",
                                                                      {"message": "who are you?"}))
    return out


def options(seen: Seen) -> dict:
    return {"sampling_callback": seen.sampling, "elicitation_callback": seen.elicitation,
            "logging_callback": seen.logging}


async def hidden() -> None:
    """The policy allows the upstream's tools and none of its gates: nothing of its resources or
    prompts is listed, read, completed or watched."""
    async with gateway(Seen()) as client:
        check("no resource is listed", (await client.list_resources()).resources == [])
        check("no prompt is listed", (await client.list_prompts()).prompts == [])
        attempts = {
            "read": client.read_resource("test://static-text"),
            "get": client.get_prompt("test_simple_prompt", None),
            "complete a template": client.complete(
                types.ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data"),
                {"name": "id", "value": "1"}),
            "complete a prompt": client.complete(
                types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg1", "value": "h"}),
        }
        if legacy:
            attempts["subscribe"] = client.subscribe_resource("test://watched-resource")
        for what, attempt in attempts.items():
            try:
                answer = await attempt
                check(f"{what} is refused", False, answer)
            except MCPError as error:
                check(f"{what} is refused", True, error.error.message)
    check.done()


async def main() -> None:
    if targets.get("hidden"):
        await hidden()
    direct_seen, through_seen = Seen(), Seen()
    direct = await everything(
        lambda seen: Client(stdio_params(targets["direct"]), mode="legacy", **options(seen)),
        direct_seen)
    through = await everything(lambda seen: gateway(seen), through_seen)
    differ = {"read test://static-binary", "prompt test_prompt_with_image", "sampling result"} \
        if gated else set()
    for key in direct:
        if key in differ:
            continue
        check(f"{key} is the same through the gateway", direct[key] == through.get(key),
              {"direct": direct[key], "through": through.get(key)})
    check("the upstream's resources were listed", "test://static-text" in direct["resources"],
          direct["resources"])
    if legacy:
        check("a level above the messages' silences them", through["logs above the level"] == [],
              through["logs above the level"])
    async with gateway(Seen()) as client:
        # A gate is no tool: not listed, and refused by tools/call, whatever the policy says.
        tools = [tool.name for tool in (await client.list_tools()).tools]
        check("no gate is listed as a tool", not any("/" in name for name in tools), tools)
        refused = await client.call_tool("resources/read", {"uri": "test://static-text"})
        text = refused.content[0].text if refused.content else ""
        check("tools/call of a gate is refused", refused.is_error and "not a tool" in text, text)
        if legacy:
            try:
                await client.subscribe_resource("test://" + "x" * 9000)
                check("a URI over 8 KiB is not subscribed to", False)
            except MCPError as error:
                check("a URI over 8 KiB is not subscribed to", "8192 bytes" in error.error.message,
                      error.error.message)
    if legacy:
        check("log messages of the call reached its client", through_seen.logs == direct_seen.logs
              and len(direct_seen.logs) == 3, {"direct": direct_seen.logs, "through": through_seen.logs})
        check("the upstream's elicitation reached the client", through_seen.elicited == ["who are you?"],
              through_seen.elicited)
    if not gated:
        if legacy:
            check("the upstream's sampling request reached the client",
                  through_seen.sampled == ["a question"], through_seen.sampled)
        check("nothing was asked of a person", through_seen.approvals == [], through_seen.approvals)
        check.done()
    binary = through["read test://static-binary"]
    check("a denied read is refused, saying why", "binary resources are not for the model"
          in json.dumps(binary), binary)
    check("nothing of a denied resource reached the client", "blob" not in json.dumps(binary), binary)
    image = through["prompt test_prompt_with_image"]
    if legacy:
        check("the gateway asked the person before getting the prompt",
              len(through_seen.approvals) == 1 and "a person looks first" in through_seen.approvals[0],
              through_seen.approvals)
    if legacy and approve:
        check("an approved get returns the prompt", image == direct["prompt test_prompt_with_image"], image)
    else:
        check("an unapproved get returns nothing", "messages" not in image, image)
    if not legacy:
        check("a client that cannot be asked is told the request was withdrawn",
              "a person must approve this first (a person looks first)" in json.dumps(image)
              and "withdrawn" in json.dumps(image), image)
    if legacy:
        sampled = json.dumps(through["sampling result"])
        check("a denied sampling request never reached the client", through_seen.sampled == [],
              through_seen.sampled)
        check("the upstream was told why", "no sampling for this upstream" in sampled, sampled)
    check.done()


def stdio_params(argv):
    from mcp.client.stdio import StdioServerParameters
    return StdioServerParameters(command=argv[0], args=argv[1:])


def gateway(seen: Seen) -> Client:
    gateway = targets["gateway"]
    if "stdio" in gateway:
        return Client(stdio_params(gateway["stdio"]), mode=mode, **options(seen))
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {gateway['key']}"})
    return Client(streamable_http_client(gateway["http"], http_client=http), mode=mode,
                  **options(seen))


asyncio.run(main())
