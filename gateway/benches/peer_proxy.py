"""A peer MCP proxy for the gateway benchmark: FastMCP's proxy (PyPI `fastmcp`) in front of the
same upstream the gateway fronts.

    python peer_proxy.py http UPSTREAM_URL PORT     # Streamable HTTP in front of an HTTP upstream
    python peer_proxy.py stdio COMMAND [ARG ...]     # stdio in front of a stdio upstream

No policy, no validation, no audit: the cost of forwarding alone, for comparison.
"""

import sys

from fastmcp.server import create_proxy


def main() -> None:
    mode = sys.argv[1]
    if mode == "http":
        proxy = create_proxy(sys.argv[2], name="peer")
        proxy.run(
            transport="http",
            host="127.0.0.1",
            port=int(sys.argv[3]),
            show_banner=False,
            log_level="warning",
            json_response=True,
        )
    elif mode == "stdio":
        config = {"mcpServers": {"upstream": {"command": sys.argv[2], "args": sys.argv[3:]}}}
        create_proxy(config, name="peer").run(transport="stdio", show_banner=False)
    else:
        sys.exit(f"unknown mode {mode!r}: http or stdio")


if __name__ == "__main__":
    main()
