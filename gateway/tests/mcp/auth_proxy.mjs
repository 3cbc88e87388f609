// Adds the gateway's API key to every request of a client that cannot send one (the MCP
// conformance suite's client sends no credentials): listens on 127.0.0.1:LISTEN and passes each
// request to 127.0.0.1:TARGET unchanged — method, path, headers (Host and Origin included, so the
// gateway's own checks see what the client sent), body — with `Authorization: Bearer KEY` added,
// and streams the answer back as it arrives (SSE included).
//
// usage: node auth_proxy.mjs LISTEN TARGET KEY

import http from "node:http";

const [listen, target, key] = process.argv.slice(2);
http.createServer((request, response) => {
  const upstream = http.request({
    host: "127.0.0.1", port: Number(target), method: request.method, path: request.url,
    headers: { ...request.headers, authorization: `Bearer ${key}` },
  }, (answer) => {
    response.writeHead(answer.statusCode, answer.headers);
    answer.pipe(response);
  });
  upstream.on("error", (error) => {
    if (!response.headersSent) response.writeHead(502);
    response.end(String(error));
  });
  response.on("close", () => upstream.destroy());
  request.pipe(upstream);
}).listen(Number(listen), "127.0.0.1", () => console.error(`proxy on ${listen} → ${target}`));
