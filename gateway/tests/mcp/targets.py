"""What the Python SDK checks comparing an upstream directly and through the gateway share: the
check counter, and clients for the two targets.

TARGETS_JSON: {"direct": [ARGV…], "gateway": {"stdio": [ARGV…]} | {"http": URL, "key": KEY}}
"""

import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


class Checks:
    """Prints one line per check; `done` prints the tally and exits non-zero if any failed."""

    def __init__(self, mode: str) -> None:
        self.mode, self.passed, self.failed = mode, 0, 0

    def __call__(self, name: str, condition: bool, detail: object = "") -> None:
        if condition:
            self.passed += 1
            print(f"ok    {self.mode} {name}")
        else:
            self.failed += 1
            print(f"FAIL  {self.mode} {name}: {detail}")

    def done(self) -> None:
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)


def stdio(argv: list[str], mode: str, env: dict | None = None) -> Client:
    return Client(StdioServerParameters(command=argv[0], args=argv[1:], env=env), mode=mode)


def gateway_client(targets: dict, mode: str, env: dict | None = None) -> Client:
    gateway = targets["gateway"]
    if "stdio" in gateway:
        return stdio(gateway["stdio"], mode, env)
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {gateway['key']}"})
    return Client(streamable_http_client(gateway["http"], http_client=http), mode=mode)
