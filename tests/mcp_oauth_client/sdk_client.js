// Drives the official MCP TypeScript SDK (@modelcontextprotocol/sdk) against svcd's /mcp with
// its OAuth client support (tests/tests/mcp_oauth.rs): discovery from the 401, Dynamic
// Client Registration, the authorization-code flow with PKCE, tools/list, tools/call, a
// refresh, and a failure once the approval is revoked. The consent step is the dashboard's
// form, posted over HTTP as the signed-in person (their session cookie).
// Usage: node sdk_client.js <node_modules dir> <svcd base URL> <owner JWT>
// Prints one JSON line with what happened; exits non-zero on an unexpected failure.
const path = require('path')
const [modules, base, jwt] = process.argv.slice(2)
const sdk = (p) => require(path.join(modules, '@modelcontextprotocol/sdk/dist/cjs', p))
const { Client } = sdk('client/index.js')
const { StreamableHTTPClientTransport } = sdk('client/streamableHttp.js')
const { auth, UnauthorizedError } = sdk('client/auth.js')

const serverUrl = new URL('/mcp', base)
const cookie = `svc_session=${jwt}`
const redirectUrl = 'http://127.0.0.1:53682/callback'
const report = { registered: null, consents: 0, reauthorization_requested: false }

function unescapeHtml (s) {
  return s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
}

// What a person does in the browser: open the consent page, tick grants and modes, approve.
async function consent (authorizationUrl) {
  const page = await fetch(authorizationUrl, { headers: { cookie }, redirect: 'manual' })
  const html = await page.text()
  if (page.status !== 200) throw new Error(`consent page: HTTP ${page.status}: ${html.slice(0, 300)}`)
  const form = new URLSearchParams()
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
    form.append(m[1], unescapeHtml(m[2]))
  }
  form.append('grant', 'capability:events.ingest')
  form.append('grant', 'capability:context.get')
  form.append('mode', 'dry_run')
  form.append('mode', 'execute')
  form.append('decision', 'approve')
  const resp = await fetch(new URL('/oauth/authorize', base), {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    body: form.toString(),
    redirect: 'manual'
  })
  const location = resp.headers.get('location')
  if (resp.status !== 303 || !location) throw new Error(`approval: HTTP ${resp.status}: ${await resp.text()}`)
  const back = new URL(location)
  if (back.searchParams.get('state') !== 'sdk-state') throw new Error(`state not returned: ${location}`)
  report.consents += 1
  return back.searchParams.get('code')
}

let allowConsent = true
let pendingCode = null
const store = {}
const provider = {
  get redirectUrl () { return redirectUrl },
  get clientMetadata () {
    return {
      client_name: 'MCP SDK test client',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none'
    }
  },
  state () { return 'sdk-state' },
  clientInformation () { return store.client },
  saveClientInformation (info) { store.client = info; report.registered = info.client_id },
  tokens () { return store.tokens },
  saveTokens (tokens) { store.tokens = tokens },
  saveCodeVerifier (v) { store.verifier = v },
  codeVerifier () { return store.verifier },
  async redirectToAuthorization (url) {
    if (!allowConsent) { report.reauthorization_requested = true; return }
    pendingCode = await consent(url)
  }
}

async function connect () {
  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
  const client = new Client({ name: 'svc-oauth-test', version: '1.0.0' })
  await client.connect(transport)
  return { client, transport }
}

async function main () {
  // 1. Unauthorized: the SDK discovers, registers and sends the person to consent.
  const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
  try {
    await new Client({ name: 'svc-oauth-test', version: '1.0.0' }).connect(first)
    throw new Error('connected without authorization')
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e
  }
  if (!pendingCode) throw new Error('no authorization code came back')
  await first.finishAuth(pendingCode)
  const firstAccess = store.tokens.access_token

  // 2. Authorized: list tools, call one.
  let { client } = await connect()
  const tools = await client.listTools()
  report.tools = tools.tools.map((t) => t.name).sort()
  const result = await client.callTool({
    name: 'ingest_event',
    arguments: { event: 'sdk_signup', email: 'sdk-oauth@example.com', _mode: 'execute' }
  })
  report.call_is_error = result.isError === true
  report.call_status = result.structuredContent && result.structuredContent.status
  await client.close()

  // 3. Refresh: a new access token (the refresh token rotates) that works.
  const refreshed = await auth(provider, { serverUrl })
  report.refresh = refreshed
  report.access_changed = store.tokens.access_token !== firstAccess
  ;({ client } = await connect())
  report.tools_after_refresh = (await client.listTools()).tools.length
  await client.close()

  // 4. The owner revokes the approval (the keys API the keys page uses): the next request
  // fails, the refresh token is refused, and the SDK can only start over with a person.
  const keys = await (await fetch(new URL('/api/v1/keys', base), { headers: { authorization: `Bearer ${jwt}` } })).json()
  const approval = keys.keys.find((k) => k.kind === 'oauth' && k.agent === report.registered && !k.revoked)
  report.approval_id = approval.id
  const del = await fetch(new URL(`/api/v1/keys/${approval.id}`, base), { method: 'DELETE', headers: { authorization: `Bearer ${jwt}` } })
  report.revoke_status = del.status
  allowConsent = false
  try {
    await client.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }))
    await client.listTools()
    report.after_revoke = 'succeeded'
  } catch (e) {
    report.after_revoke = e instanceof UnauthorizedError ? 'UnauthorizedError' : `${e.name}: ${e.message}`
  }
  console.log(JSON.stringify(report))
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e))
  console.log(JSON.stringify({ ...report, failed: String(e && e.message) }))
  process.exit(1)
})
