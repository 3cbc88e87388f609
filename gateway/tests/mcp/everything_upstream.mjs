// A reference upstream for the official MCP conformance suite's server scenarios
// (@modelcontextprotocol/conformance 0.1.16), written from the scenarios' own descriptions with the
// official TypeScript SDK: every tool, resource, resource template, prompt and completion the
// scenarios name, logging, progress, sampling and elicitation.
//
// usage: node everything_upstream.mjs            serve over stdio (as the gateway's upstream)
//        node everything_upstream.mjs --http PORT serve Streamable HTTP on 127.0.0.1:PORT/mcp
//                                                  (the suite's direct target)
// Over HTTP it keeps one session per client, with an in-memory event store (SSE resumption) and
// DNS-rebinding protection (Host and Origin must be localhost).

import http from "node:http";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import { isInitializeRequest, SubscribeRequestSchema, UnsubscribeRequestSchema }
  from "@modelcontextprotocol/sdk/types.js";

// A 1×1 red PNG and a 44-byte silent WAV header.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";
const SCHEMA_2020_12 = {
  $schema: "https://json-schema.org/draft/2020-12/schema", type: "object",
  $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
  properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
  additionalProperties: false,
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({ content: [{ type: "text", text: value }] });

function everything() {
  const server = new McpServer(
    { name: "toolgate-conformance-reference", version: "1.0.0" },
    { capabilities: { logging: {}, completions: {}, resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true }, tools: { listChanged: true } } },
  );

  server.registerTool("test_simple_text", { description: "Returns simple text" },
    async () => text("This is a simple text response for testing."));
  server.registerTool("test_image_content", { description: "Returns an image" },
    async () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }));
  server.registerTool("test_audio_content", { description: "Returns audio" },
    async () => ({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] }));
  server.registerTool("test_embedded_resource", { description: "Returns an embedded resource" },
    async () => ({ content: [{ type: "resource", resource: { uri: "test://embedded-resource",
      mimeType: "text/plain", text: "This is an embedded resource content." } }] }));
  server.registerTool("test_multiple_content_types", { description: "Returns text, image and a resource" },
    async () => ({ content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG, mimeType: "image/png" },
      { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json",
        text: JSON.stringify({ test: "data", value: 123 }) } },
    ] }));
  server.registerTool("test_tool_with_logging", { description: "Logs while it runs" },
    async (extra) => {
      for (const [index, message] of ["Tool execution started", "Tool processing data",
        "Tool execution completed"].entries()) {
        if (index > 0) await sleep(50);
        await server.sendLoggingMessage({ level: "info", data: message }, extra.sessionId);
      }
      return text("Tool with logging executed successfully");
    });
  server.registerTool("test_error_handling", { description: "Always fails" },
    async () => ({ isError: true,
      content: [{ type: "text", text: "This tool intentionally returns an error for testing" }] }));
  server.registerTool("test_tool_with_progress", { description: "Reports progress" },
    async (extra) => {
      const token = extra._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (token !== undefined) {
          await extra.sendNotification({ method: "notifications/progress",
            params: { progressToken: token, progress, total: 100 } });
        }
        if (progress < 100) await sleep(50);
      }
      return text(`Tool with progress executed (token ${token === undefined ? "absent" : "given"})`);
    });
  server.registerTool("test_sampling", { description: "Asks the client's model",
    inputSchema: { prompt: z.string() } },
    async ({ prompt }) => {
      const answer = await server.server.createMessage({ maxTokens: 100,
        messages: [{ role: "user", content: { type: "text", text: prompt } }] });
      return text(`LLM response: ${answer.content?.text ?? JSON.stringify(answer.content)}`);
    });
  server.registerTool("test_elicitation", { description: "Asks the person",
    inputSchema: { message: z.string() } },
    async ({ message }) => {
      const answer = await server.server.elicitInput({ message, requestedSchema: { type: "object",
        properties: { username: { type: "string", description: "User's response" },
          email: { type: "string", description: "User's email address" } },
        required: ["username", "email"] } });
      return text(`User response: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    });
  server.registerTool("test_elicitation_sep1034_defaults", { description: "Asks with defaults" },
    async () => {
      const answer = await server.server.elicitInput({ message: "Defaults for every primitive type",
        requestedSchema: { type: "object", properties: {
          name: { type: "string", default: "John Doe" },
          age: { type: "integer", default: 30 },
          score: { type: "number", default: 95.5 },
          status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
          verified: { type: "boolean", default: true } } } });
      return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    });
  server.registerTool("test_elicitation_sep1330_enums", { description: "Asks with every enum form" },
    async () => {
      const answer = await server.server.elicitInput({ message: "Every enum variant",
        requestedSchema: { type: "object", properties: {
          untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
          titledSingle: { type: "string", oneOf: [{ const: "value1", title: "First Option" },
            { const: "value2", title: "Second Option" }, { const: "value3", title: "Third Option" }] },
          legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"],
            enumNames: ["Option One", "Option Two", "Option Three"] },
          untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
          titledMulti: { type: "array", items: { anyOf: [{ const: "value1", title: "First Choice" },
            { const: "value2", title: "Second Choice" }, { const: "value3", title: "Third Choice" }] } },
        } } });
      return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    });
  // The scenario checks that JSON Schema 2020-12 keywords survive listing; the SDK's tools are
  // declared with zod shapes, so this tool's listed schema is replaced as the list is sent.
  server.registerTool("json_schema_2020_12_tool",
    { description: "Tool with JSON Schema 2020-12 features", inputSchema: { name: z.string().optional() } },
    async () => text("ok"));
  const list = server.server._requestHandlers.get("tools/list");
  server.server._requestHandlers.set("tools/list", async (request, extra) => {
    const listed = await list(request, extra);
    for (const tool of listed.tools) {
      if (tool.name === "json_schema_2020_12_tool") tool.inputSchema = SCHEMA_2020_12;
    }
    return listed;
  });
  server.registerTool("test_reconnection", { description: "Closes its SSE stream mid-call" },
    async (extra) => {
      extra.closeSSEStream?.();
      await sleep(100);
      return text("Reconnection test completed successfully");
    });

  server.registerResource("static-text", "test://static-text",
    { description: "A static text resource", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain",
      text: "This is the content of the static text resource." }] }));
  server.registerResource("static-binary", "test://static-binary",
    { description: "A static binary resource", mimeType: "image/png" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "image/png", blob: PNG }] }));
  server.registerResource("watched-resource", "test://watched-resource",
    { description: "A resource one may subscribe to", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "watched" }] }));
  server.registerResource("template",
    new ResourceTemplate("test://template/{id}/data", { list: undefined,
      complete: { id: (value) => ["123", "456", "789"].filter((id) => id.startsWith(value)) } }),
    { description: "Data by id", mimeType: "application/json" },
    async (uri, { id }) => ({ contents: [{ uri: uri.href, mimeType: "application/json",
      text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] }));
  const subscribed = new Set();
  server.server.setRequestHandler(SubscribeRequestSchema,
    async (request) => { subscribed.add(request.params.uri); return {}; });
  server.server.setRequestHandler(UnsubscribeRequestSchema,
    async (request) => { subscribed.delete(request.params.uri); return {}; });

  // Beyond the suite: fixtures of the gateway's own tests (tests/mcp/cross_clients.py) — a call
  // that waits, and a resource whose read logs and asks the client's model while it runs.
  server.registerTool("slow_wait", { description: "Waits 0.8 s" },
    async () => { await sleep(800); return text("waited"); });
  server.registerTool("trailing_log", { description: "Answers, then logs about the call 0.3 s later" },
    async (extra) => {
      setTimeout(() => {
        server.sendLoggingMessage({ level: "info", data: "trailing: finished alice's private request" },
          extra.sessionId).catch(() => {});
      }, 300);
      return text("answered");
    });
  server.registerTool("late_log", { description: "Works on for 2 s, logs, then answers" },
    async (extra) => {
      await sleep(2000);
      await server.sendLoggingMessage({ level: "info", data: "late: alice's call" }, extra.sessionId);
      return text("done late");
    });
  server.registerResource("noisy", "test://noisy", { description: "Logs and samples when read", mimeType: "text/plain" },
    async (uri, extra) => {
      await server.sendLoggingMessage({ level: "info", data: "reading test://noisy" }, extra.sessionId);
      let answer = "no answer";
      try {
        const sampled = await server.server.createMessage({ maxTokens: 10,
          messages: [{ role: "user", content: { type: "text", text: "during the read of test://noisy" } }] });
        answer = sampled.content?.text ?? "?";
      } catch (error) {
        answer = `refused: ${error.message}`;
      }
      return { contents: [{ uri: uri.href, mimeType: "text/plain", text: `noisy (${answer})` }] };
    });

  server.registerPrompt("test_simple_prompt", { description: "A prompt without arguments" },
    () => ({ messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }] }));
  server.registerPrompt("test_prompt_with_arguments", { description: "A prompt with two arguments",
    argsSchema: { arg1: z.string().describe("First test argument"), arg2: z.string().describe("Second test argument") } },
    ({ arg1, arg2 }) => ({ messages: [{ role: "user",
      content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }] }));
  server.registerPrompt("test_prompt_with_embedded_resource", { description: "A prompt embedding a resource",
    argsSchema: { resourceUri: z.string().describe("URI of the resource to embed") } },
    ({ resourceUri }) => ({ messages: [
      { role: "user", content: { type: "resource", resource: { uri: resourceUri, mimeType: "text/plain",
        text: "Embedded resource content for testing." } } },
      { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
    ] }));
  server.registerPrompt("test_prompt_with_image", { description: "A prompt with an image" },
    () => ({ messages: [
      { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please analyze the image above." } },
    ] }));
  return server;
}

async function serveHttp(port) {
  const sessions = new Map();
  const body = (request) => new Promise((resolve, reject) => {
    let data = "";
    request.on("data", (chunk) => { data += chunk; });
    request.on("end", () => { try { resolve(data ? JSON.parse(data) : undefined); } catch (error) { reject(error); } });
  });
  const hosts = ["localhost", "127.0.0.1", "[::1]"].flatMap((host) => [host, `${host}:${port}`]);
  const origins = ["localhost", "127.0.0.1", "[::1]"].flatMap((host) => [`http://${host}`, `http://${host}:${port}`]);
  http.createServer(async (request, response) => {
    try {
      const parsed = request.method === "POST" ? await body(request) : undefined;
      const id = request.headers["mcp-session-id"];
      let transport = id ? sessions.get(id) : undefined;
      if (!transport && !id && isInitializeRequest(parsed)) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(), eventStore: new InMemoryEventStore(), retryInterval: 500,
          enableDnsRebindingProtection: true, allowedHosts: hosts, allowedOrigins: origins,
          onsessioninitialized: (sessionId) => sessions.set(sessionId, transport),
        });
        transport.onclose = () => sessions.delete(transport.sessionId);
        await everything().connect(transport);
      }
      if (!transport) {
        response.writeHead(id ? 404 : 400, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ jsonrpc: "2.0", id: null,
          error: { code: -32000, message: id ? "Session not found" : "Bad Request: no session" } }));
        return;
      }
      await transport.handleRequest(request, response, parsed);
    } catch (error) {
      if (!response.headersSent) {
        response.writeHead(500);
        response.end(String(error));
      }
    }
  }).listen(port, "127.0.0.1", () => console.error(`listening on http://127.0.0.1:${port}/mcp`));
}

const at = process.argv.indexOf("--http");
if (at > 0) {
  await serveHttp(Number(process.argv[at + 1]));
} else {
  await everything().connect(new StdioServerTransport());
}
