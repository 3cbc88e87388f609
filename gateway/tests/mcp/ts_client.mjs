// Drives toolgate-mcp-gateway with the official TypeScript MCP SDK (@modelcontextprotocol/sdk,
// pinned in .ci/node-mcp) over stdio or Streamable HTTP. The upstream is
// tests/mcp/hostile_upstream.py in its normal mode; its record of received calls proves what
// reached it.
//
// usage: node ts_client.mjs stdio GATEWAY POLICY HOSTILE_SCRIPT WORK_DIR
//        node ts_client.mjs http URL KEY WORK_DIR
// Prints one line per check and "N passed, N failed"; exits non-zero if any check failed.

import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);
let passed = 0, failed = 0;
const answers = [];
const check = (name, condition, detail = "") => {
  if (condition) { passed++; console.log(`ok    ts-${mode} ${name}`); }
  else { failed++; console.log(`FAIL  ts-${mode} ${name}: ${JSON.stringify(detail)}`); }
};

function client() {
  const c = new Client({ name: "ts-check", version: "1" }, { capabilities: { elicitation: {} } });
  c.setRequestHandler(ElicitRequestSchema, async () => {
    const action = answers.shift() ?? "cancel";
    return action === "accept" ? { action, content: {} } : { action };
  });
  return c;
}

const text = (result) => (result.content ?? []).map((block) => block.text ?? "").join("\n");

async function run(c, names, work) {
  const record = join(work, "record.jsonl");
  const records = (tool) => existsSync(record)
    ? readFileSync(record, "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((e) => e.tool === tool)
    : [];
  const listed = (await c.listTools()).tools.map((tool) => tool.name).sort();
  check("the denied tool is hidden", !listed.includes(names.crash) && listed.includes(names.echo), listed);
  let result = await c.callTool({ name: names.echo, arguments: { text: "hi" } });
  check("an allowed call reaches the upstream", !result.isError && text(result) === "echo: hi"
    && records("echo").length === 1, result);
  result = await c.callTool({ name: names.crash, arguments: {} });
  check("a denied call is refused and never reaches it", result.isError && records("crash").length === 0, result);
  result = await c.callTool({ name: "no_such_tool", arguments: {} });
  check("an unknown tool is refused", result.isError === true, result);
  result = await c.callTool({ name: names.echo, arguments: { text: 5 } });
  check("invalid arguments are refused", result.isError && records("echo").length === 1, result);
  answers.push("accept");
  result = await c.callTool({ name: names.write, arguments: { path: "/tmp/ts" } });
  check("ask -> the person accepts -> runs exactly once", !result.isError && records("write").length === 1, result);
  answers.push("decline");
  result = await c.callTool({ name: names.write, arguments: { path: "/tmp/ts2" } });
  check("ask -> declined -> runs nothing", result.isError && records("write").length === 1, result);
}

if (mode === "stdio") {
  const [gateway, policy, hostile, work] = rest;
  const c = client();
  await c.connect(new StdioClientTransport({
    command: gateway,
    args: ["--policy", policy, "--", "python3", hostile, "serve", join(work, "record.jsonl")],
    stderr: "ignore",
  }));
  check("the server is the gateway", c.getServerVersion()?.name === "toolgate-mcp-gateway", c.getServerVersion());
  await run(c, { echo: "echo", crash: "crash", write: "write" }, work);
  await c.close();
} else {
  const [url, key, work] = rest;
  let refused = false;
  try {
    await client().connect(new StreamableHTTPClientTransport(new URL(url)));
  } catch (error) {
    refused = /401/.test(String(error));
  }
  check("no key: the connection is refused with 401", refused);
  const c = client();
  await c.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  }));
  await run(c, { echo: "h__echo", crash: "h__crash", write: "h__write" }, work);
  await c.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
