// Drives every message kind the gateway forwards beyond tools — resources (list, templates, read,
// subscribe, unsubscribe), prompts (list, get), completions, logging, an upstream's sampling and
// elicitation requests — with the official TypeScript MCP SDK's client against
// tests/mcp/everything_upstream.mjs directly and through toolgate-mcp-gateway, and checks that the
// answers are equal. (Over Streamable HTTP the conformance suite, itself built on this SDK, drives
// the same kinds: tests/clients/conformance.rs.)
//
// usage: node ts_forwarded.mjs TARGETS_JSON
// TARGETS_JSON: {"direct": [ARGV…], "gateway": {"stdio": [ARGV…]}}
// Prints one line per check and "N passed, N failed"; exits non-zero if any check failed.

import { isDeepStrictEqual } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const targets = JSON.parse(process.argv[2]);
let passed = 0, failed = 0;
const check = (name, condition, detail = "") => {
  if (condition) { passed++; console.log(`ok    ts-stdio ${name}`); }
  else { failed++; console.log(`FAIL  ts-stdio ${name}: ${JSON.stringify(detail)}`); }
};
// `isError` absent means false (the protocol's default); the gateway always says which.
const withoutMeta = ({ _meta, ...rest }) => ("content" in rest ? { isError: false, ...rest } : rest);

async function everything([command, ...args]) {
  const seen = { sampled: [], elicited: [], logs: [] };
  const client = new Client({ name: "ts-forwarded", version: "1" },
    { capabilities: { sampling: {}, elicitation: { form: {} } } });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    seen.sampled.push(request.params.messages[0].content.text);
    return { role: "assistant", model: "test-model", stopReason: "endTurn",
      content: { type: "text", text: "the client's model answers" } };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    seen.elicited.push(request.params.message);
    return { action: "accept", content: { username: "ada", email: "ada@example.org" } };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    seen.logs.push(notification.params.data);
  });
  await client.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
  const out = {};
  out.resources = (await client.listResources()).resources.map((r) => r.uri).sort();
  out.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate).sort();
  for (const uri of ["test://static-text", "test://static-binary", "test://template/7/data"]) {
    out[`read ${uri}`] = withoutMeta(await client.readResource({ uri }));
  }
  await client.subscribeResource({ uri: "test://watched-resource" });
  await client.unsubscribeResource({ uri: "test://watched-resource" });
  out.prompts = (await client.listPrompts()).prompts.map((p) => p.name).sort();
  for (const [name, args] of [["test_simple_prompt", undefined],
    ["test_prompt_with_arguments", { arg1: "hello", arg2: "world" }],
    ["test_prompt_with_embedded_resource", { resourceUri: "test://x" }],
    ["test_prompt_with_image", undefined]]) {
    out[`prompt ${name}`] = withoutMeta(await client.getPrompt({ name, arguments: args }));
  }
  out.completion = (await client.complete({
    ref: { type: "ref/resource", uri: "test://template/{id}/data" },
    argument: { name: "id", value: "4" },
  })).completion.values.sort();
  await client.setLoggingLevel("info");
  out.logging = withoutMeta(await client.callTool({ name: "test_tool_with_logging", arguments: {} }));
  out.sampling = withoutMeta(await client.callTool({ name: "test_sampling", arguments: { prompt: "a question" } }));
  const elicitation = withoutMeta(await client.callTool({ name: "test_elicitation", arguments: { message: "who are you?" } }));
  // The upstream prints the answer's object; the SDKs' typed models keep its members, not their order.
  out.elicitation = elicitation.content.map(({ text }) => {
    const [head, tail] = text.split("content=");
    return [head, JSON.parse(tail)];
  });
  await client.close();
  return { out, seen };
}

const direct = await everything(targets.direct);
const through = await everything(targets.gateway.stdio);
for (const key of Object.keys(direct.out)) {
  check(`${key} is the same through the gateway`, isDeepStrictEqual(direct.out[key], through.out[key]),
    { direct: direct.out[key], through: through.out[key] });
}
check("the upstream's resources were listed", direct.out.resources.includes("test://static-text"), direct.out.resources);
check("log messages of the call reached its client",
  direct.seen.logs.length === 3 && isDeepStrictEqual(direct.seen.logs, through.seen.logs), through.seen.logs);
check("the upstream's sampling request reached the client", isDeepStrictEqual(through.seen.sampled, ["a question"]),
  through.seen.sampled);
check("the upstream's elicitation reached the client", isDeepStrictEqual(through.seen.elicited, ["who are you?"]),
  through.seen.elicited);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
