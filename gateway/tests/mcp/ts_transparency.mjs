// Calls every tool of tests/mcp/rich_upstream.py directly and through toolgate-mcp-gateway with
// the official TypeScript MCP SDK's client, and checks that the gateway changed nothing: the listed
// tools and every result (each block with its annotations and _meta, structuredContent, isError,
// the result's _meta) are equal — except the documented change: a result's _meta keys under
// `dev.toolgate/` are toolgate's own and are not passed on.
//
// usage: node ts_transparency.mjs TARGETS_JSON
// TARGETS_JSON: {"direct": [ARGV…], "gateway": {"stdio": [ARGV…]} | {"http": URL, "key": KEY}}
// Prints one line per check and "N passed, N failed"; exits non-zero if any check failed.

import { isDeepStrictEqual } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const targets = JSON.parse(process.argv[2]);
const via = targets.gateway.stdio ? "ts-stdio" : "ts-http";
let passed = 0, failed = 0;
const check = (name, condition, detail = "") => {
  if (condition) { passed++; console.log(`ok    ${via} ${name}`); }
  else { failed++; console.log(`FAIL  ${via} ${name}: ${JSON.stringify(detail)}`); }
};
const TOOLS = { picture: {}, sound: {}, link: {}, embedded: {}, failing: {}, with_meta: {},
  read_file: { path: "/a.txt" }, mixed: {}, empty: {} };

async function everything(transport) {
  const client = new Client({ name: "ts-transparency", version: "1" });
  await client.connect(transport);
  const tools = Object.fromEntries((await client.listTools()).tools.map((tool) => [tool.name, tool]));
  const results = {};
  for (const [name, args] of Object.entries(TOOLS)) {
    results[name] = await client.callTool({ name, arguments: args });
  }
  await client.close();
  return { tools, results };
}

const stdio = ([command, ...args]) => new StdioClientTransport({ command, args, stderr: "ignore" });
const direct = await everything(stdio(targets.direct));
const through = await everything(targets.gateway.stdio
  ? stdio(targets.gateway.stdio)
  : new StreamableHTTPClientTransport(new URL(targets.gateway.http), {
    requestInit: { headers: { Authorization: `Bearer ${targets.gateway.key}` } },
  }));

const listed = (tool) => tool && ({ name: tool.name, description: tool.description,
  inputSchema: tool.inputSchema, outputSchema: tool.outputSchema });
for (const name of Object.keys(TOOLS)) {
  check(`${name} is listed as the upstream lists it`,
    isDeepStrictEqual(listed(through.tools[name]), listed(direct.tools[name])),
    [through.tools[name], direct.tools[name]]);
}
const kinds = direct.results.mixed.content.map((block) => block.type);
check("the upstream sends every block type",
  isDeepStrictEqual(kinds, ["text", "image", "audio", "resource_link", "resource"]), kinds);
for (const name of Object.keys(TOOLS)) {
  const want = structuredClone(direct.results[name]);
  if (name === "with_meta") delete want._meta["dev.toolgate/approvalId"];
  check(`${name}: the result passes through unchanged`, isDeepStrictEqual(through.results[name], want),
    { gateway: through.results[name], direct: want });
}
check("with_meta: a forged approval id is not passed on, the rest of _meta is",
  isDeepStrictEqual(through.results.with_meta._meta, { "example.com/trace": "abc" }), through.results.with_meta);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
