"""A raw Streamable HTTP upstream (Python's standard library only), for replies no SDK writes.

usage: raw_http_upstream.py PORT sse|json

It serves one tool, `echo`, and answers each call as an SSE event (`sse`) or a JSON body
(`json`): the text `lone-surrogate` gets a result holding a lone surrogate escape (`\\udcff`, as
Python writes an undecodable file name), `result-and-error` a reply with both, anything else
`echo: TEXT`; `status-CODE-json` or `status-CODE-text` an HTTP status CODE with a body that is
no JSON-RPC message; `drop-none` and `drop-partial` a connection closed with no reply or halfway
through one.
"""
import json, socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOLS = [{"name": "echo", "description": "Echo the text.",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def reply(self, status, body=b"", kind="application/json", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers: self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
    def do_DELETE(self): self.reply(200)
    def do_GET(self): self.reply(405)
    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            return self.reply(202)
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "raw", "version": "0"}}
            return self.reply(200, json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode(),
                              headers=[("Mcp-Session-Id", "s1")])
        if method == "tools/list":
            return self.reply(200, json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}}).encode())
        if method == "tools/call":
            text = message["params"]["arguments"]["text"]
            if text.startswith("drop-"):
                # The call ran; the connection is closed with no reply (`drop-none`) or halfway
                # through one (`drop-partial`).
                if text == "drop-partial":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: 500\r\n\r\n{\"jsonrpc\": ")
                    self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if text.startswith("status-"):
                # The call ran; the reply is an HTTP error status with a body no JSON-RPC reader
                # takes (`status-500-json`: a JSON body that is no JSON-RPC error).
                _, status, kind = text.split("-")
                body = b'{"detail": "boom"}' if kind == "json" else b"Internal trouble"
                kind = "application/json" if kind == "json" else "text/plain"
                return self.reply(int(status), body, kind=kind)
            if text == "lone-surrogate":
                answer = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "a\udcffb"}]}}
            elif text == "result-and-error":
                answer = {"jsonrpc": "2.0", "id": ident, "result": {"content": []}, "error": {"code": 1, "message": "m"}}
            else:
                answer = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "echo: " + text}]}}
            if sys.argv[2] == "json":
                return self.reply(200, json.dumps(answer).encode())
            return self.reply(200, ("data: " + json.dumps(answer) + "\n\n").encode(), kind="text/event-stream")
        self.reply(200, json.dumps({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}}).encode())

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
