// A real OpenID Connect provider (npm oidc-provider) on loopback for Anteroom's sign-in tests.
//
// Started with OIDC_TEST_ACCOUNTS (JSON: account id -> claims) it listens on a free port and prints
// {"issuer": "http://127.0.0.1:PORT"}. The test then registers Anteroom as its client with
// PUT /test/client {"client_id", "client_secret", "redirect_uri"} (Anteroom's callback is only known once
// Anteroom has started) and may change an account's claims with PUT /test/accounts/ID {claims} (a person
// moved between groups at the provider). Sign-in uses oidc-provider's own development login form: any
// password is accepted for a known account. Consent is granted for the one client, as a company's provider
// does for its own apps.
import http from 'node:http';
import Provider from 'oidc-provider';

const accounts = new Map(Object.entries(JSON.parse(process.env.OIDC_TEST_ACCOUNTS ?? '{}')));
let provider;

const readJson = (req) => new Promise((resolve, reject) => {
  let body = '';
  req.on('data', (chunk) => { body += chunk; });
  req.on('end', () => {
    try { resolve(JSON.parse(body)); } catch (error) { reject(error); }
  });
});

const start = (issuer, client) => new Provider(issuer, {
  clients: [{
    client_id: client.client_id,
    client_secret: client.client_secret,
    redirect_uris: [client.redirect_uri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'name'],
    groups: ['groups'],
  },
  // The scopes' claims go into the ID token itself, as Okta's and Keycloak's groups claims do.
  conformIdTokenClaims: false,
  findAccount: async (ctx, id) => (accounts.has(id)
    ? { accountId: id, claims: async () => ({ sub: id, ...accounts.get(id) }) }
    : undefined),
  loadExistingGrant: async (ctx) => {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile groups');
    await grant.save();
    return grant;
  },
  cookies: { keys: ['anteroom-test-only-cookie-key'] },
  features: { devInteractions: { enabled: true } },
});

const server = http.createServer(async (req, res) => {
  try {
    if (req.method === 'PUT' && req.url === '/test/client') {
      const { port } = server.address();
      provider = start(`http://127.0.0.1:${port}`, await readJson(req));
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'PUT' && req.url.startsWith('/test/accounts/')) {
      accounts.set(decodeURIComponent(req.url.slice('/test/accounts/'.length)), await readJson(req));
      res.writeHead(204).end();
      return;
    }
    if (!provider) {
      res.writeHead(503).end('no client registered yet');
      return;
    }
    provider.callback()(req, res);
  } catch (error) {
    res.writeHead(400).end(String(error));
  }
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`${JSON.stringify({ issuer: `http://127.0.0.1:${port}` })}\n`);
  // The test reads one line; oidc-provider's notices go to stderr, so a closed stdout cannot end the provider.
  console.log = console.info = (...args) => process.stderr.write(`${args.join(' ')}\n`);
});
