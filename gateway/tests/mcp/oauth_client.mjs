// MCP client with OAuth (official TypeScript SDK, @modelcontextprotocol/sdk 1.x) for gateway tests.
//
//   node oauth_client.mjs URL TOOL ARGS_JSON [--login-hint alice] [--resource-override R]
//                      [--token-auth-method none|client_secret_basic|client_secret_post]
//                      [--redirect-uri URI] [--scope S] [--trace]
//
// The SDK is loaded from $MCP_TS_SDK (its package directory, under .ci/node-mcp's node_modules).
// StreamableHTTPClientTransport runs with an in-memory OAuthClientProvider. Its
// redirectToAuthorization follows the authorization URL (plus login_hint) with
// fetch(redirect: 'manual'), keeping cookies, until a redirect to the redirect URI;
// the captured code goes to transport.finishAuth(code) and the client reconnects.
//
// Prints one JSON line {"tools": [...], "result": <CallToolResult>} and exits 0,
// or {"error": "..."} and exits 1. --trace logs every HTTP exchange to stderr.

import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const SDK = process.env.MCP_TS_SDK;
if (!SDK) { console.error('set MCP_TS_SDK to the SDK package directory'); process.exit(2); }
const sdk = (p) => import(pathToFileURL(`${SDK}/dist/esm/${p}`).href);

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'login-hint': { type: 'string', default: 'alice' },
    'resource-override': { type: 'string' },
    'token-auth-method': { type: 'string' },
    'redirect-uri': { type: 'string', default: 'http://localhost:3031/callback' },
    scope: { type: 'string' },
    trace: { type: 'boolean', default: false },
  },
});

const trace = (...a) => { if (opts.trace) console.error('[ts-client]', ...a); };

function die(message) {
  process.stdout.write(`${JSON.stringify({ error: message })}\n`);
  process.exit(1);
}

// fetch wrapper: optional trace, and remembers the last failed response for error messages.
let lastFailure;
function makeFetch() {
  return async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.href ?? input.url;
    const method = init.method ?? 'GET';
    if (opts.trace) {
      const headers = new Headers(init.headers);
      const auth = headers.get('authorization');
      let body = '';
      if (init.body instanceof URLSearchParams) {
        const p = new URLSearchParams(init.body);
        for (const k of ['code', 'code_verifier', 'client_secret', 'refresh_token']) p.delete(k);
        body = ` body=${p}`;
      } else if (typeof init.body === 'string') {
        body = ` body=${init.body.slice(0, 400)}`;
      }
      trace(`> ${method} ${url}${auth ? ` auth=${auth.split(' ')[0]}` : ''}${body}`);
    }
    const res = await fetch(input, init);
    const www = res.headers.get('www-authenticate');
    trace(`< ${res.status} ${url}${www ? ` www-authenticate=${www}` : ''}`);
    if (!res.ok && res.status !== 405) lastFailure = `HTTP ${res.status} from ${method} ${url}${www ? ` (www-authenticate: ${www})` : ''}`;
    return res;
  };
}

class HeadlessOAuthProvider {
  constructor({ redirectUrl, loginHint, tokenAuthMethod, scope, resourceOverride }) {
    this._redirectUrl = redirectUrl;
    this._loginHint = loginHint;
    this._clientMetadata = {
      client_name: 'mcp-ts-fixture',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(tokenAuthMethod ? { token_endpoint_auth_method: tokenAuthMethod } : {}),
      ...(scope ? { scope } : {}),
    };
    this._clientInfo = undefined;
    this._tokens = undefined;
    this._codeVerifier = undefined;
    this._discovery = undefined;
    this._state = undefined;
    this.pendingCode = undefined;
    if (resourceOverride) {
      // When defined, the SDK sends whatever this returns as the RFC 8707 resource.
      this.validateResourceURL = async () => new URL(resourceOverride);
    }
  }

  get redirectUrl() { return this._redirectUrl; }

  get clientMetadata() { return this._clientMetadata; }

  state() {
    this._state = randomBytes(16).toString('base64url');
    return this._state;
  }

  clientInformation() { return this._clientInfo; }

  saveClientInformation(info) { this._clientInfo = info; }

  tokens() { return this._tokens; }

  saveTokens(tokens) { this._tokens = tokens; }

  saveCodeVerifier(v) { this._codeVerifier = v; }

  codeVerifier() {
    if (!this._codeVerifier) throw new Error('no code verifier saved');
    return this._codeVerifier;
  }

  saveDiscoveryState(s) { this._discovery = s; }

  discoveryState() { return this._discovery; }

  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'client') this._clientInfo = undefined;
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'verifier') this._codeVerifier = undefined;
    if (scope === 'all' || scope === 'discovery') this._discovery = undefined;
  }

  // The "browser": follow redirects by hand with a cookie jar until the redirect URI.
  async redirectToAuthorization(authorizationUrl) {
    this.pendingCode = undefined;
    const url = new URL(authorizationUrl);
    if (this._loginHint) url.searchParams.set('login_hint', this._loginHint);
    trace(`authorize: ${url}`);
    const jar = new Map();
    let next = url.href;
    for (let hop = 0; hop < 20; hop += 1) {
      const headers = {};
      if (jar.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      const res = await fetch(next, { redirect: 'manual', headers });
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const i = pair.indexOf('=');
        const name = pair.slice(0, i).trim();
        const value = pair.slice(i + 1).trim();
        if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c)) jar.delete(name);
        else jar.set(name, value);
      }
      const location = res.headers.get('location');
      trace(`  GET ${next.split('?')[0]} -> ${res.status} ${location ?? ''}`);
      if (res.status < 300 || res.status > 399 || !location) {
        const text = await res.text();
        throw new Error(`authorization stopped at ${next.split('?')[0]} with HTTP ${res.status}: ${text.slice(0, 300)}`);
      }
      await res.body?.cancel();
      next = new URL(location, next).href;
      if (next.startsWith(this._redirectUrl)) {
        const params = new URL(next).searchParams;
        if (params.get('error')) {
          throw new Error(`authorization error: ${params.get('error')} ${params.get('error_description') ?? ''}`);
        }
        if (this._state && params.get('state') !== this._state) {
          throw new Error(`state mismatch: ${params.get('state')} != ${this._state}`);
        }
        this.pendingCode = params.get('code');
        return;
      }
    }
    throw new Error('too many redirects while authorizing');
  }
}

async function main() {
  if (positionals.length !== 3) die('usage: node oauth_client.mjs URL TOOL ARGS_JSON [--login-hint alice] [--resource-override R]');
  const [serverUrl, toolName, argsJson] = positionals;
  let toolArgs;
  try {
    toolArgs = JSON.parse(argsJson);
  } catch (err) {
    die(`ARGS_JSON is not JSON: ${err.message}`);
  }

  const { Client } = await sdk('client/index.js');
  const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
  const { UnauthorizedError } = await sdk('client/auth.js');

  const authProvider = new HeadlessOAuthProvider({
    redirectUrl: opts['redirect-uri'],
    loginHint: opts['login-hint'],
    tokenAuthMethod: opts['token-auth-method'],
    scope: opts.scope,
    resourceOverride: opts['resource-override'],
  });
  const fetchFn = makeFetch();
  const newTransport = () => new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider, fetch: fetchFn });
  const newClient = () => new Client({ name: 'mcp-ts-fixture', version: '0.0.1' });

  let transport = newTransport();
  let client = newClient();
  try {
    await client.connect(transport);
  } catch (err) {
    if (!(err instanceof UnauthorizedError) || !authProvider.pendingCode) throw err;
    trace('authorization code captured; finishing auth and reconnecting');
    await transport.finishAuth(authProvider.pendingCode);
    await client.close().catch(() => {});
    transport = newTransport();
    client = newClient();
    await client.connect(transport);
  }

  try {
    const { tools } = await client.listTools();
    const result = await client.callTool({ name: toolName, arguments: toolArgs });
    process.stdout.write(`${JSON.stringify({ tools: tools.map((t) => t.name), result })}\n`);
  } finally {
    await client.close().catch(() => {});
  }
}

main().then(
  () => process.exit(0),
  (err) => die(`${err?.name ?? 'Error'}: ${err?.message ?? err}${lastFailure ? ` [last failure: ${lastFailure}]` : ''}`),
);
