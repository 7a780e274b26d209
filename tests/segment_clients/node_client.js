// Drives Segment's official Node client (@segment/analytics-node) against svcd with the same
// scenario as python_client.py (tests/tests/segment.rs).
// Usage: node node_client.js <node_modules dir> <base URL, e.g. http://svcd/segment> <write key> <tag>
// analytics-node resolves `path` against `host` as a URL, so a base path goes into `path`.
const path = require('path')
const [modules, base, writeKey, tag] = process.argv.slice(2)
const { Analytics } = require(path.join(modules, '@segment/analytics-node'))
const url = new URL(base)
const host = url.origin
const batchPath = url.pathname.replace(/\/$/, '') + '/v1/batch'

const errors = []
const analytics = new Analytics({ writeKey, host, path: batchPath, flushAt: 3, flushInterval: 100, maxRetries: 3 })
analytics.on('error', (e) => errors.push(String(e && (e.reason || e.message || e.code) || e)))

const anon = `${tag}-anon`, user = `${tag}-user`, old = `${tag}-old`
const email = `${tag}@example.com`, group = `${tag}-acme`
const campaign = { name: 'spring', source: 'newsletter', medium: 'email' }
const order = {
  userId: user, event: 'Order Completed', properties: { revenue: 42.5, sku: 'SKU-1' },
  timestamp: new Date('2026-01-02T03:04:05Z'), messageId: `${tag}-m5`,
}

async function main () {
  analytics.page({
    anonymousId: anon, category: 'Docs', name: 'Pricing', properties: { path: '/pricing' },
    context: { campaign, userAgent: 'Mozilla/5.0 (svc test)' }, messageId: `${tag}-m1`,
  })
  analytics.track({ anonymousId: anon, event: 'Signup Started', properties: { plan: 'pro' }, messageId: `${tag}-m2` })
  analytics.track({ userId: old, event: 'Legacy Login', messageId: `${tag}-m3` })
  await analytics.flush()
  analytics.identify({
    userId: user, anonymousId: anon,
    traits: { email, name: 'Ada Lovelace', plan: 'pro' }, messageId: `${tag}-m4`,
  })
  analytics.track(order)
  analytics.group({ userId: user, groupId: group, traits: { name: 'Acme Inc', industry: 'Tools' }, messageId: `${tag}-m6` })
  analytics.alias({ previousId: old, userId: user, messageId: `${tag}-m7` })
  await analytics.flush()
  analytics.track(order)
  await analytics.closeAndFlush({ timeout: 20000 })
  console.log(JSON.stringify({ library: 'analytics-node', errors }))
  process.exit(errors.length ? 1 : 0)
}
main().catch((e) => { console.error(e); process.exit(2) })
