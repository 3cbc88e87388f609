"""MCP client with OAuth (official Python SDK, mcp 2.x) for gateway tests.

    python oauth_client.py URL TOOL ARGS_JSON [--login-hint alice] [--resource-override R]
                            [--token-auth-method none|client_secret_basic|client_secret_post]
                            [--redirect-uri URI] [--mode auto|legacy] [--trace] [--verbose]

Connects to URL over Streamable HTTP using mcp.client.auth.OAuthClientProvider (in-memory
storage, dynamic client registration, authorization code + PKCE). The authorization step is
headless: the authorization URL (plus login_hint) is followed with httpx2, keeping cookies,
until a redirect to the redirect URI, whose code/state/iss are handed back to the SDK.

Prints one JSON line {"tools": [...], "result": <CallToolResult>} and exits 0,
or {"error": "..."} and exits 1. --trace logs every HTTP request/response to stderr.
"""

import argparse
import json
import logging
import sys
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlparse, urlunparse

import anyio
import httpx2
from mcp.client import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class HeadlessBrowser:
    """redirect_handler / callback_handler pair that completes the authorization without a person."""

    def __init__(self, redirect_uri: str, login_hint: str | None, trace: bool) -> None:
        self.redirect_uri = redirect_uri
        self.login_hint = login_hint
        self.trace = trace
        self.result: AuthorizationCodeResult | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        self.result = None
        url = authorization_url
        if self.login_hint:
            parts = urlparse(url)
            query = parse_qs(parts.query, keep_blank_values=True)
            query["login_hint"] = [self.login_hint]
            url = urlunparse(parts._replace(query=urlencode(query, doseq=True)))
        if self.trace:
            print(f"[py-client] authorize: {url}", file=sys.stderr)
        # A fresh cookie jar per authorization: the provider's interaction/resume cookies.
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as browser:
            for _ in range(20):
                resp = await browser.get(url)
                location = resp.headers.get("location")
                if self.trace:
                    print(f"[py-client]   GET {url.split('?')[0]} -> {resp.status_code} {location or ''}", file=sys.stderr)
                if resp.status_code not in (301, 302, 303, 307, 308) or not location:
                    raise OAuthFlowError(
                        f"authorization stopped at {url.split('?')[0]} with HTTP {resp.status_code}: {resp.text[:300]}"
                    )
                location = urljoin(url, location)
                if location.startswith(self.redirect_uri):
                    params = parse_qs(urlparse(location).query)
                    if "error" in params:
                        raise OAuthFlowError(
                            f"authorization error: {params['error'][0]} {params.get('error_description', [''])[0]}"
                        )
                    self.result = AuthorizationCodeResult(
                        code=params["code"][0],
                        state=params.get("state", [None])[0],
                        iss=params.get("iss", [None])[0],
                    )
                    return
                url = location
        raise OAuthFlowError("too many redirects while authorizing")

    async def callback_handler(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise OAuthFlowError("no authorization code captured")
        return self.result


LAST_FAILURE: list[str] = []


def hooks(trace: bool) -> dict[str, list[Any]]:
    async def on_request(request: httpx2.Request) -> None:
        extra = ""
        if request.method == "POST" and request.headers.get("content-type", "").startswith(
            ("application/x-www-form-urlencoded", "application/json")
        ):
            body = request.content.decode("utf-8", "replace")
            # keep secrets out of the log
            for secret in ("code_verifier", "client_secret", "refresh_token", "code"):
                if f"{secret}=" in body:
                    q = parse_qs(body)
                    q.pop(secret, None)
                    body = urlencode(q, doseq=True)
            extra = f" body={body[:400]}"
        auth = request.headers.get("authorization", "")
        auth = f" auth={auth.split(' ')[0]}" if auth else ""
        print(f"[py-client] > {request.method} {request.url}{auth}{extra}", file=sys.stderr)

    async def on_response(response: httpx2.Response) -> None:
        www = response.headers.get("www-authenticate")
        if response.status_code >= 400 and response.status_code != 405:
            LAST_FAILURE[:] = [
                f"HTTP {response.status_code} from {response.request.method} {response.request.url}"
                + (f" (www-authenticate: {www})" if www else "")
            ]
        if trace:
            print(
                f"[py-client] < {response.status_code} {response.request.url}"
                + (f" www-authenticate={www}" if www else ""),
                file=sys.stderr,
            )

    return {"request": [on_request] if trace else [], "response": [on_response]}


def error_text(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(error_text(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tool_args = json.loads(args.args_json)
    if not isinstance(tool_args, dict):
        raise ValueError("ARGS_JSON must be a JSON object")

    browser = HeadlessBrowser(args.redirect_uri, args.login_hint, args.trace)
    metadata = OAuthClientMetadata(
        client_name="mcp-python-fixture",
        redirect_uris=[args.redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method=args.token_auth_method,
    )
    oauth = OAuthClientProvider(
        server_url=args.url,
        client_metadata=metadata,
        storage=MemoryStorage(),
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    if args.resource_override:
        override = args.resource_override
        oauth.context.get_resource_url = lambda: override  # type: ignore[method-assign]

    async with httpx2.AsyncClient(
        auth=oauth,
        timeout=httpx2.Timeout(30, read=300),
        event_hooks=hooks(args.trace),
    ) as http:
        async with Client(streamable_http_client(args.url, http_client=http), mode=args.mode) as client:
            tools = await client.list_tools()
            result = await client.call_tool(args.tool, tool_args)
    return {
        "tools": [t.name for t in tools.tools],
        "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("tool")
    ap.add_argument("args_json")
    ap.add_argument("--login-hint", default="alice")
    ap.add_argument("--resource-override", default=None, help="send this RFC 8707 resource instead of the SDK's")
    ap.add_argument(
        "--token-auth-method",
        default=None,
        choices=["none", "client_secret_basic", "client_secret_post"],
        help="token_endpoint_auth_method to register (default: omitted, the server decides)",
    )
    ap.add_argument("--redirect-uri", default="http://localhost:3030/callback")
    ap.add_argument("--mode", default="auto", help="mcp Client mode: auto (default) or legacy")
    ap.add_argument("--trace", action="store_true", help="log HTTP traffic to stderr")
    ap.add_argument("--verbose", action="store_true", help="SDK debug logging to stderr")
    args = ap.parse_args()

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    try:
        out = anyio.run(run, args)
    except BaseException as exc:  # noqa: BLE001 - report any failure as JSON
        if isinstance(exc, KeyboardInterrupt):
            raise
        message = error_text(exc)
        if LAST_FAILURE:
            message += f" [last failure: {LAST_FAILURE[0]}]"
        print(json.dumps({"error": message}))
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
