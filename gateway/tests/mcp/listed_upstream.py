"""An MCP upstream on stdio (Python's standard library only) that lists the tools a JSON file
holds, read again on every tools/list, and answers every call with the tool's name; each call is
appended to RECORD_FILE as one JSON line.

usage: listed_upstream.py TOOLS_FILE RECORD_FILE
"""

import json
import sys

tools_file, record = sys.argv[1], sys.argv[2]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "listed", "version": "1"}}})
    elif method == "tools/list":
        with open(tools_file, encoding="utf-8") as file:
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": json.load(file)}})
    elif method == "tools/call":
        name = message["params"]["name"]
        with open(record, "a", encoding="utf-8") as file:
            file.write(json.dumps({"tool": name}) + "\n")
        send({"jsonrpc": "2.0", "id": ident,
              "result": {"content": [{"type": "text", "text": "ran " + name}]}})
    elif ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no such method"}})
