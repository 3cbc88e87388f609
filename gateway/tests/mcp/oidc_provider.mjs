// A local OpenID provider for integration tests, built on oidc-provider.
//
//   node oidc_provider.mjs CONFIG.json   (run from a directory whose node_modules holds
//   oidc-provider and jose: .ci/node-mcp installs them)
//
// CONFIG.json:
//   {
//     "port": 9000,                      // 0 = pick a free port
//     "keys": [{"kid": "k1", "alg": "RS256"}],   // keys[0] signs all tokens (RS256/PS256/ES256/EdDSA)
//     "clients": [{"client_id": "svc", "client_secret": "s3cret",
//                  "groups": ["ops"], "access_token_ttl": 2,
//                  "scope": "mcp", "redirect_uris": ["http://127.0.0.1:1/cb"]}],
//     "accounts": {"alice": {"groups": ["ops"]}, "bob": {"groups": []}},
//     "scopes": ["mcp", "tools.read"],   // optional, added to openid/offline_access
//     "default_scope": "mcp",            // optional: for /auth requests naming no scope
//                                        //   (default: all "scopes", or "openid" if none)
//     "access_token_ttl": 300
//   }
//
// Prints {"issuer":"http://127.0.0.1:PORT"} on stdout once listening; logs go to stderr.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';

import Provider from 'oidc-provider';
import { exportJWK, generateKeyPair } from 'jose';

const log = (...args) => console.error('[provider]', ...args);

function fail(msg) {
  console.error(`[provider] fatal: ${msg}`);
  process.exit(2);
}

if (process.argv.length < 3) fail('usage: node oidc_provider.mjs CONFIG.json');

let config;
try {
  config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
} catch (err) {
  fail(`cannot read config ${process.argv[2]}: ${err.message}`);
}

const port = Number.isInteger(config.port) ? config.port : 0;
const defaultTTL = Number.isInteger(config.access_token_ttl) ? config.access_token_ttl : 300;
const accounts = config.accounts ?? { alice: { groups: [] } };
const keySpecs = config.keys?.length ? config.keys : [{ kid: 'k1', alg: 'RS256' }];
const extraScopes = (config.scopes ?? []).filter((s) => typeof s === 'string' && s);
const OIDC_SCOPES = ['openid', 'offline_access'];
const STATIC_SCOPES = [...new Set([...OIDC_SCOPES, ...extraScopes])];

// Scope applied to an authorization request that names none (oidc-provider refuses to
// finish an authorization that grants no scope at all).
const defaultScope = typeof config.default_scope === 'string' && config.default_scope
  ? config.default_scope
  : (extraScopes.join(' ') || 'openid');

const clientConfigs = new Map((config.clients ?? []).map((c) => [c.client_id, c]));

// ---------------------------------------------------------------------------
// Keys: generated fresh on every start, one per configured kid.
async function buildJwks() {
  const keys = [];
  for (const { kid, alg = 'RS256' } of keySpecs) {
    if (!kid) fail('every key needs a kid');
    const options = { extractable: true };
    if (alg.startsWith('RS') || alg.startsWith('PS')) options.modulusLength = 2048;
    if (alg === 'EdDSA') options.crv = 'Ed25519';
    const { privateKey } = await generateKeyPair(alg, options);
    const jwk = await exportJWK(privateKey);
    keys.push({ ...jwk, kid, alg, use: 'sig' });
  }
  return { keys };
}

// The signing alg for JWT access tokens and ID tokens: the first configured key's.
const signingAlg = keySpecs[0].alg ?? 'RS256';

// ---------------------------------------------------------------------------
// Helpers.
function ttlFor(client) {
  const cfg = client && clientConfigs.get(client.clientId);
  return Number.isInteger(cfg?.access_token_ttl) && cfg.access_token_ttl > 0
    ? cfg.access_token_ttl
    : defaultTTL;
}

function splitScope(value) {
  return typeof value === 'string' ? value.split(' ').filter(Boolean) : [];
}

// Scopes a resource server accepts: every configured scope plus anything the
// current request asked for (so arbitrary scopes work), minus the OIDC ones.
function resourceScopesFor(ctx) {
  const set = new Set(extraScopes);
  const { params, entities } = ctx.oidc;
  for (const s of splitScope(params?.scope)) set.add(s);
  for (const name of ['AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']) {
    for (const s of splitScope(entities?.[name]?.scope)) set.add(s);
  }
  for (const s of OIDC_SCOPES) set.delete(s);
  return [...set].join(' ');
}

function asArray(v) {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : [v];
}

// ---------------------------------------------------------------------------
async function main() {
  const jwks = await buildJwks();

  const server = http.createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const issuer = `http://127.0.0.1:${server.address().port}`;

  const staticClients = [...clientConfigs.values()].map((c) => {
    if (!c.client_id) fail('every configured client needs a client_id');
    const meta = {
      client_id: c.client_id,
      grant_types: ['client_credentials', 'authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: c.redirect_uris ?? ['http://127.0.0.1/callback'],
    };
    if (c.client_secret) {
      meta.client_secret = c.client_secret;
      meta.token_endpoint_auth_method = c.token_endpoint_auth_method ?? 'client_secret_basic';
    } else {
      meta.token_endpoint_auth_method = 'none';
      meta.grant_types = ['authorization_code', 'refresh_token'];
    }
    if (c.scope) meta.scope = c.scope;
    return meta;
  });

  const provider = new Provider(issuer, {
    jwks,
    clients: staticClients,
    scopes: STATIC_SCOPES,
    responseTypes: ['code'],
    clientDefaults: {
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: signingAlg,
    },
    cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: async () => true },
      revocation: { enabled: true, allowedPolicy: async () => true },
      registration: { enabled: true, initialAccessToken: false },
      resourceIndicators: {
        enabled: true,
        // Without a resource parameter: no default (opaque, audience-less token).
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        // At the token endpoint, use the resource granted at /auth even when the
        // token request omits it (also when "openid" was requested).
        useGrantedResource: async () => true,
        // Any absolute URI is an acceptable resource; its token is a JWT.
        getResourceServerInfo: async (ctx, resourceIndicator) => ({
          scope: resourceScopesFor(ctx),
          audience: resourceIndicator,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: signingAlg } },
        }),
      },
    },
    enabledJWA: {
      idTokenSigningAlgValues: ['RS256', 'PS256', 'ES256', 'Ed25519', 'EdDSA'],
    },
    pkce: {
      // Public clients must use PKCE (S256 is the only method offered).
      required: (_ctx, client) => client.clientAuthMethod === 'none',
    },
    ttl: {
      AccessToken: (_ctx, _token, client) => ttlFor(client),
      ClientCredentials: (_ctx, _token, client) => ttlFor(client),
      AuthorizationCode: 60,
      IdToken: 3600,
      RefreshToken: 24 * 3600,
      Interaction: 600,
      Session: 24 * 3600,
      Grant: 24 * 3600,
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    clientBasedCORS: () => true,
    findAccount: async (_ctx, sub) => {
      const acct = accounts[sub];
      if (!acct) return undefined;
      return {
        accountId: sub,
        claims: async () => ({ sub, groups: acct.groups ?? [] }),
      };
    },
    extraTokenClaims: async (_ctx, token) => {
      if (token.kind === 'ClientCredentials') {
        return { groups: clientConfigs.get(token.clientId)?.groups ?? [] };
      }
      if (token.accountId) {
        return { groups: accounts[token.accountId]?.groups ?? [] };
      }
      return { groups: [] };
    },
    interactions: {
      url: async (_ctx, interaction) => `/interaction/${interaction.uid}`,
    },
    renderError: async (ctx, out) => {
      ctx.type = 'text/plain';
      ctx.body = Object.entries(out).map(([k, v]) => `${k}: ${v}`).join('\n');
    },
  });
  provider.proxy = false;

  // Request log (stderr).
  provider.use(async (ctx, next) => {
    const started = Date.now();
    await next();
    log(`${ctx.method} ${ctx.originalUrl.split('?')[0]} -> ${ctx.status} (${Date.now() - started}ms)`);
  });

  // Authorization requests without a scope get the default scope.
  provider.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/auth' && !ctx.query.scope && !ctx.query.request_uri) {
      log(`authorization request without scope: using default scope "${defaultScope}"`);
      ctx.query = { ...ctx.query, scope: defaultScope };
    }
    await next();
  });

  // Dynamic registration is open; registration would reject a `scope` value the
  // server does not know, but SDK clients register whatever the resource
  // advertises. Drop unknown values so arbitrary scopes can still be requested
  // (requests for unknown scopes are honoured when a resource is named).
  provider.use(async (ctx, next) => {
    if (ctx.method === 'POST' && ctx.path === '/reg' && ctx.is('application/json')) {
      const chunks = [];
      for await (const chunk of ctx.req) chunks.push(chunk);
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      if (body && typeof body === 'object' && typeof body.scope === 'string') {
        const known = splitScope(body.scope).filter((s) => STATIC_SCOPES.includes(s));
        const dropped = splitScope(body.scope).filter((s) => !STATIC_SCOPES.includes(s));
        if (dropped.length) {
          log(`registration: dropping unknown scope values ${dropped.join(' ')}`);
          if (known.length) body.scope = known.join(' ');
          else delete body.scope;
        }
      }
      ctx.request.body = body ?? Buffer.concat(chunks).toString('utf8');
    }
    await next();
  });

  // Interaction endpoint: no human. Sign in the account named by login_hint
  // (default "alice"), grant everything requested, and resume.
  provider.use(async (ctx, next) => {
    const m = /^\/interaction\/([^/]+)$/.exec(ctx.path);
    if (!m || ctx.method !== 'GET') return next();

    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { prompt, params, session } = details;
    const result = {};

    let accountId = session?.accountId;
    if (!accountId || prompt.name === 'login') {
      accountId = params.login_hint || 'alice';
      if (!accounts[accountId]) {
        log(`interaction ${details.uid}: unknown account ${accountId}`);
        await provider.interactionFinished(ctx.req, ctx.res, {
          error: 'access_denied',
          error_description: `unknown account ${accountId}`,
        }, { mergeWithLastSubmission: false });
        ctx.respond = false;
        return undefined;
      }
      result.login = { accountId };
    }

    let grant;
    if (details.grantId) grant = await provider.Grant.find(details.grantId);
    if (!grant) grant = new provider.Grant({ accountId, clientId: params.client_id });

    const requested = splitScope(params.scope);
    const oidcScopes = requested.filter((s) => STATIC_SCOPES.includes(s));
    if (oidcScopes.length) grant.addOIDCScope(oidcScopes.join(' '));
    const rsScopes = requested.filter((s) => !OIDC_SCOPES.includes(s));
    for (const resource of asArray(params.resource)) {
      grant.addResourceScope(resource, rsScopes.join(' '));
    }
    const d = prompt.details ?? {};
    if (d.missingOIDCScope?.length) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims?.length) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    result.consent = { grantId: await grant.save() };

    log(`interaction ${details.uid}: prompt=${prompt.name} account=${accountId} scope="${params.scope ?? ''}" resource=${JSON.stringify(params.resource ?? null)}`);
    await provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
    ctx.respond = false;
    return undefined;
  });

  for (const event of ['server_error', 'grant.error', 'registration_create.error', 'authorization.error', 'introspection.error']) {
    provider.on(event, (ctx, err) => log(`${event}: ${err?.message}${err?.error_description ? ` (${err.error_description})` : ''}`));
  }
  provider.on('grant.success', (ctx) => {
    const at = ctx.oidc.entities.AccessToken ?? ctx.oidc.entities.ClientCredentials;
    log(`token issued: grant_type=${ctx.oidc.params.grant_type} client=${ctx.oidc.client?.clientId} aud=${at?.aud ?? '-'} scope="${at?.scope ?? ''}" format=${at?.resourceServer ? 'jwt' : 'opaque'}`);
  });
  provider.on('registration_create.success', (ctx, client) => {
    log(`client registered: ${client.clientId} auth=${client.tokenEndpointAuthMethod} redirect_uris=${JSON.stringify(client.redirectUris)} scope="${client.scope ?? ''}"`);
  });

  server.on('request', provider.callback());

  const shutdown = (signal) => {
    log(`${signal}: shutting down`);
    server.close(() => process.exit(0));
    server.closeAllConnections?.();
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  log(`listening; keys=${jwks.keys.map((k) => `${k.kid}/${k.alg}`).join(',')} scopes=${STATIC_SCOPES.join(' ')}`);
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
}

main().catch((err) => fail(err.stack ?? String(err)));
