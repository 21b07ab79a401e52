// kafkajs scenario for the compat suite (compat/clients.go reads its output).
//
//   node client.js BOOTSTRAP TOPIC GROUP TXN_TOPIC
//   node client.js --security SPEC...
//
// The security mode runs one step per SPEC (see compat/goclients/security.go for the
// format): a short produce and group consume over a secured listener, or, with
// refused=1, a connection the broker must refuse.
//
// Each step prints one line: RESULT <step> ok | RESULT <step> fail <reason>.
// Steps: create-topic, produce-<codec> for every codec, consume-group, resume,
// idempotent, txn. A failed step does not stop the later ones.
'use strict'

const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4 = require('lz4js')
const xxh32 = require('lz4js/xxh32')
const { ZstdCodec } = require('zstd-codec')

const fs = require('fs')

const SECURITY = process.argv[2] === '--security'
let [BOOTSTRAP, TOPIC, GROUP, TXN_TOPIC] = process.argv.slice(2)
const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD }
const PER_CODEC = 10

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
// kafkajs ships only gzip; LZ4 (frame format) and zstd come from pure-JS / wasm packages.
// lz4js writes a frame with the block-independence flag clear, which Kafka's LZ4 reader
// refuses; a frame of one block (up to 4 MiB, far above a batch here) is independent, so
// set the flag and recompute the header checksum.
function kafkaLz4 (src) {
  if (src.length > 4 << 20) throw new Error('lz4: batch above one 4 MiB block')
  const out = Buffer.from(lz4.compress(src))
  out[4] |= 0x20
  out[6] = (xxh32.hash(0, out, 4, 2) >> 8) & 0xff
  return out
}
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: async (encoder) => kafkaLz4(encoder.buffer),
  decompress: async (buffer) => Buffer.from(lz4.decompress(buffer)),
})
const zstdReady = new Promise((resolve) => ZstdCodec.run((zstd) => resolve(new zstd.Simple())))
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  compress: async (encoder) => Buffer.from((await zstdReady).compress(encoder.buffer, 3)),
  decompress: async (buffer) => Buffer.from((await zstdReady).decompress(buffer)),
})

function newKafka (security = {}) {
  return new Kafka({
    clientId: 'gokafkad-compat',
    brokers: [BOOTSTRAP],
    logLevel: logLevel.ERROR,
    requestTimeout: 15000,
    retry: { retries: 4 },
    ...security,
  })
}
let kafka = SECURITY ? null : newKafka()

// unsecuredJWS is an unsecured JWS (alg "none", no signature) for sub, which Kafka's
// default OAUTHBEARER validator accepts.
function unsecuredJWS (sub) {
  const enc = (o) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  return enc({ alg: 'none' }) + '.' + enc({ sub, iat: now, exp: now + 3600 }) + '.'
}

// securityOptions are kafkajs's ssl and sasl options for a spec.
function securityOptions (spec) {
  const o = {}
  if (spec.protocol.endsWith('SSL')) {
    o.ssl = { ca: [fs.readFileSync(spec.ca)] }
    if (spec.cert) {
      o.ssl.cert = fs.readFileSync(spec.cert)
      o.ssl.key = fs.readFileSync(spec.key)
    }
  }
  if (spec.protocol.startsWith('SASL_')) {
    const mechanism = spec.mechanism.toLowerCase()
    o.sasl = mechanism === 'oauthbearer'
      ? { mechanism, oauthBearerProvider: async () => ({ value: unsecuredJWS(spec.user) }) }
      : { mechanism, username: spec.user, password: spec.password }
  }
  return o
}

function withTimeout (p, ms, what) {
  let t
  return Promise.race([p, new Promise((_, reject) => { t = setTimeout(() => reject(new Error(what + ' timed out after ' + ms + 'ms')), ms) })])
    .finally(() => clearTimeout(t))
}

async function result (step, fn) {
  try {
    await withTimeout(fn(), 90000, step)
    console.log(`RESULT ${step} ok`)
  } catch (e) {
    console.log(`RESULT ${step} fail ${String((e && e.name) || 'Error')}: ${String((e && e.message) || e).replace(/\n/g, ' ')}`)
    console.error(e)
  }
}

const codecKeys = (codec) => Array.from({ length: PER_CODEC }, (_, i) => `k-${codec}-${i}`)

async function createTopic () {
  const admin = kafka.admin()
  await admin.connect()
  try {
    const created = await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 3, replicationFactor: 1 }, { topic: TXN_TOPIC, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true })
    if (!created) throw new Error('createTopics answered false (topic existed?)')
    const names = await admin.listTopics()
    if (!names.includes(TOPIC)) throw new Error('created topic not listed')
  } finally {
    await admin.disconnect()
  }
}

async function produce (codec, keys, opts = {}) {
  const producer = kafka.producer({ allowAutoTopicCreation: false, ...opts })
  await producer.connect()
  try {
    await producer.send({
      topic: TOPIC,
      acks: -1,
      compression: CODECS[codec],
      messages: keys.map((k) => ({ key: k, value: 'v' + k.slice(1), headers: { codec, key: k } })),
    })
  } finally {
    await producer.disconnect()
  }
}

// consume reads until every wanted key came, then a little longer to catch extras;
// offsets are committed as kafkajs does by default (after each batch).
async function consume (want, { groupId = GROUP, topic = TOPIC, settleMs = 1500 } = {}) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  const got = new Map()
  let dup = null
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    let resolveDone
    const done = new Promise((resolve) => { resolveDone = resolve })
    await consumer.run({
      eachMessage: async ({ message }) => {
        const k = message.key && message.key.toString()
        if (got.has(k)) dup = k
        got.set(k, message)
        if (want.every((w) => got.has(w))) resolveDone()
      },
    })
    await withTimeout(done, 45000, 'reading ' + want.length + ' records (got ' + got.size + ')')
    await new Promise((resolve) => setTimeout(resolve, settleMs))
  } finally {
    await consumer.disconnect()
  }
  if (dup) throw new Error(`key ${dup} read twice`)
  const extra = [...got.keys()].filter((k) => !want.includes(k))
  if (extra.length) throw new Error(`unexpected records ${extra.slice(0, 5)}`)
  return got
}

async function consumeGroup () {
  const want = Object.keys(CODECS).flatMap(codecKeys)
  const got = await consume(want)
  for (const [k, m] of got) {
    if (m.value.toString() !== 'v' + k.slice(1)) throw new Error(`key ${k} has value ${m.value}`)
    if (String(m.headers.key) !== k || String(m.headers.codec) !== k.split('-')[1]) throw new Error(`key ${k} has headers ${JSON.stringify(m.headers)}`)
  }
}

async function resume () {
  const keys = Array.from({ length: 5 }, (_, i) => `k-resume-${i}`)
  await produce('none', keys)
  await consume(keys)
}

async function idempotent () {
  await produce('none', Array.from({ length: 5 }, (_, i) => `k-idem-${i}`), { idempotent: true, maxInFlightRequests: 1 })
}

async function txn () {
  const producer = kafka.producer({ transactionalId: 'compat-js-' + TXN_TOPIC, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  try {
    let t = await producer.transaction()
    await t.send({ topic: TXN_TOPIC, messages: [0, 1, 2].map((i) => ({ key: `committed-${i}`, value: 'c' })) })
    await t.commit()
    t = await producer.transaction()
    await t.send({ topic: TXN_TOPIC, messages: [0, 1].map((i) => ({ key: `aborted-${i}`, value: 'a' })) })
    await t.abort()
  } finally {
    await producer.disconnect()
  }
  // kafkajs consumers read committed by default.
  await consume([0, 1, 2].map((i) => `committed-${i}`), { groupId: GROUP + '-txn', topic: TXN_TOPIC })
}

async function runSecurity (specs) {
  for (const raw of specs) {
    const spec = Object.fromEntries(raw.split(',').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]))
    BOOTSTRAP = spec.bootstrap
    TOPIC = spec.topic
    GROUP = spec.group
    kafka = newKafka({ ...securityOptions(spec), retry: { retries: spec.refused ? 1 : 4 } })
    if (spec.refused === '1') {
      const admin = kafka.admin()
      try {
        await withTimeout(admin.connect().then(() => admin.listTopics()), 20000, 'connecting')
        console.log(`RESULT ${spec.name} fail the broker let the client in`)
      } catch (e) {
        const cause = e.cause ? ` (${e.cause.name}: ${e.cause.message})` : ''
        console.log(`RESULT ${spec.name} ok refused: ${(e.name || 'Error') + ': ' + String(e.message || e).replace(/\n/g, ' ')}${cause}`)
      } finally {
        await admin.disconnect().catch(() => {})
      }
      continue
    }
    await result(spec.name, async () => {
      const keys = Array.from({ length: 5 }, (_, i) => `k-sec-${i}`)
      await produce('none', keys)
      await consume(keys)
    })
  }
}

async function main () {
  if (SECURITY) return runSecurity(process.argv.slice(3))
  await result('create-topic', createTopic)
  for (const codec of Object.keys(CODECS)) await result('produce-' + codec, () => produce(codec, codecKeys(codec)))
  await result('consume-group', consumeGroup)
  await result('resume', resume)
  await result('idempotent', idempotent)
  await result('txn', txn)
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
