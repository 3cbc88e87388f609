"""The upstream behind the approval-page browser test, written with the official Python SDK.

One tool, `deploy`, whose description holds markup and script (the page must show it as text).
Every call that reaches it is appended as one JSON line to the file named by TOOLGATE_MCP_RECORD:
the record proves which approved calls ran, and how often.
"""

import json
import os

from mcp.server.mcpserver import MCPServer

RECORD = os.environ["TOOLGATE_MCP_RECORD"]
server = MCPServer("page-upstream")

HOSTILE_DESCRIPTION = (
    'Deploy <b>now</b><img src=x onerror="document.title=\'pwned-by-description\'">'
    "<script>document.title='pwned-by-description'</script>"
)


@server.tool(description=HOSTILE_DESCRIPTION)
def deploy(env: str, notes: str) -> str:
    with open(RECORD, "a", encoding="utf-8") as file:
        file.write(json.dumps({"tool": "deploy", "env": env}) + "\n")
    return f"deployed to {env}"


if __name__ == "__main__":
    server.run()
