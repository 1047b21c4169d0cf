// spec/interop/serve_fuzz.js -- bad input against `otskit serve`: random
// bytes, truncated and bit-flipped protobuf made by the official Node SDK's
// encoder, PlainBuffer with a bad checksum, trailing non-zero bytes,
// unknown APIs, bad signatures and (rarely) bodies over the limit, in a
// bounded loop on 127.0.0.1 (OTSKIT_FUZZ_N requests, default 100000).
// Every request must get an answer (no dropped connection) that is either
// an error carrying a protobuf Error{code, message} or, for a mutation that
// still makes a valid read, a 200 — and the classes that can never be
// valid must be errors. The tables' contents (every row, every cell and
// timestamp) must be the same before and after: seeds that write target a
// table that does not exist. Prints "N passed, N failed".
'use strict';
const TableStore = require('tablestore');
const crypto = require('crypto');
const http = require('http');
const protos = require('tablestore/lib/protocol/tablestore_compiled_proto.js').main.proto;

const URL_ = new URL(process.env.OTSKIT_URL), AK = process.env.OTSKIT_AK, SK = process.env.OTSKIT_SK;
const INST = process.env.OTSKIT_INSTANCE;
const N = Number(process.env.OTSKIT_FUZZ_N || 100000);
const Long = TableStore.Long;
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const cl = new TableStore.Client({ accessKeyId: AK, secretAccessKey: SK, endpoint: process.env.OTSKIT_URL, instancename: INST, maxRetries: 0 });

// one check per name (per class of request), failed if any request failed it
const seen = {}, fails = {};
function check(name, ok, detail) {
  seen[name] = true;
  if (ok) return;
  fails[name] = (fails[name] || 0) + 1;
  if (fails[name] <= 3) console.log('FAIL ' + name + (detail !== undefined ? ': ' + JSON.stringify(detail) : ''));
}

// a deterministic PRNG (xorshift32) so a failure can be replayed
let seed = Number(process.env.OTSKIT_FUZZ_SEED || 12345) >>> 0 || 1;
function rnd() { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed / 4294967296; }
function ri(n) { return Math.floor(rnd() * n); }
function bytes(n) { const b = Buffer.alloc(n); for (let i = 0; i < n; i++) b[i] = ri(256); return b; }

function send(api, body, sk) {
  const h = {
    'x-ots-date': new Date().toISOString(), 'x-ots-apiversion': '2015-12-31', 'x-ots-accesskeyid': AK,
    'x-ots-instancename': INST, 'x-ots-contentmd5': crypto.createHash('md5').update(body).digest('base64'),
  };
  const sts = '/' + api + '\nPOST\n\n' + Object.keys(h).sort().map((n) => n + ':' + h[n] + '\n').join('');
  h['x-ots-signature'] = crypto.createHmac('sha1', sk || SK).update(sts).digest('base64');
  h['content-length'] = body.length;
  return new Promise((resolve) => {
    const req = http.request({ host: URL_.hostname, port: URL_.port, method: 'POST', path: '/' + encodeURI(api), headers: h, agent }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks), headers: res.headers }));
    });
    req.on('error', (e) => resolve({ error: String(e) }));
    req.end(body);
  });
}
function isError(r) {
  if (r.error || r.status < 400) return false;
  try { const e = protos.Error.decode(r.body); return typeof e.code === 'string' && e.code.startsWith('OTS'); } catch (e) { return false; }
}

const enc = (op, p) => Buffer.from(protos[op.charAt(0).toUpperCase() + op.slice(1) + 'Request'].encode(TableStore.encoder.encode(op, p)).finish());
const cond = new TableStore.Condition(TableStore.RowExistenceExpectation.IGNORE, null);
const P = [{ user: 'a' }, { seq: Long.fromNumber(1) }];
const SEEDS = [
  ['GetRow', enc('getRow', { tableName: 'orders', primaryKey: P, maxVersions: 1 })],
  ['GetRange', enc('getRange', { tableName: 'big', direction: 'FORWARD', inclusiveStartPrimaryKey: [{ id: TableStore.INF_MIN }], exclusiveEndPrimaryKey: [{ id: TableStore.INF_MAX }], limit: 3, maxVersions: 1 })],
  ['BatchGetRow', enc('batchGetRow', { tables: [{ tableName: 'orders', primaryKey: [P], maxVersions: 1 }] })],
  ['DescribeTable', enc('describeTable', { tableName: 'orders' })],
  ['PutRow', enc('putRow', { tableName: 'nope', condition: cond, primaryKey: P, attributeColumns: [{ s: 'v' }, { i: Long.fromNumber(3) }] })],
  ['UpdateRow', enc('updateRow', { tableName: 'nope', condition: cond, primaryKey: P, updateOfAttributeColumns: [{ PUT: [{ s: 'v' }] }, { INCREMENT: [{ i: Long.fromNumber(1) }] }, { DELETE_ALL: ['x'] }] })],
  ['DeleteRow', enc('deleteRow', { tableName: 'nope', condition: cond, primaryKey: P })],
  ['BatchWriteRow', enc('batchWriteRow', { tables: [{ tableName: 'nope', rows: [{ type: 'PUT', condition: cond, primaryKey: P, attributeColumns: [{ s: 'v' }] }] }] })],
];
const NOBODY = ['GetRow', 'GetRange', 'BatchGetRow', 'PutRow', 'UpdateRow', 'DeleteRow', 'BatchWriteRow', 'CreateTable', 'DescribeTable', 'DeleteTable', 'UpdateTable', 'ComputeSplitPointsBySize'];
// a GetRow whose PlainBuffer key has its row checksum (the last byte) wrong
function badChecksum() {
  const key = Buffer.from(protos.GetRowRequest.decode(SEEDS[0][1]).primaryKey);
  key[key.length - 1] ^= 1 + ri(255);
  return Buffer.from(protos.GetRowRequest.encode({ tableName: 'orders', primaryKey: key, maxVersions: 1 }).finish());
}
function trailing() {
  const key = Buffer.from(protos.GetRowRequest.decode(SEEDS[0][1]).primaryKey);
  const junk = bytes(1 + ri(8)); junk[0] = junk[0] || 1;
  return Buffer.from(protos.GetRowRequest.encode({ tableName: 'orders', primaryKey: Buffer.concat([key, junk]), maxVersions: 1 }).finish());
}

async function snapshot() {
  const out = {};
  const lt = await new Promise((r) => cl.listTable({}, (e, d) => r(e ? String(e.message) : d.tableNames.slice().sort())));
  out.tables = lt;
  for (const [t, pk] of [['orders', [['user'], ['seq']]], ['big', [['id']]]]) {
    let start = pk.map((p) => ({ [p[0]]: TableStore.INF_MIN }));
    const end = pk.map((p) => ({ [p[0]]: TableStore.INF_MAX }));
    out[t] = [];
    for (;;) {
      const d = await new Promise((r) => cl.getRange({ tableName: t, direction: 'FORWARD', inclusiveStartPrimaryKey: start, exclusiveEndPrimaryKey: end, maxVersions: 1 }, (e, d2) => r(e ? { err: e.message } : d2)));
      if (d.err) { out[t].push(d.err); break; }
      for (const row of d.rows) out[t].push(JSON.stringify([row.primaryKey, row.attributes]));
      if (!d.nextStartPrimaryKey) break;
      start = d.nextStartPrimaryKey.map((c) => ({ [c.name]: c.value }));
    }
  }
  return out;
}

(async () => {
  const before = await snapshot();
  check('snapshot has rows', before.big.length > 0 && typeof before.big[0] === 'string', before.big.length);
  let i = 0;
  const counts = {};
  async function one() {
    const kind = ri(8);
    let api, body, mustFail = true, sk;
    const s = SEEDS[ri(SEEDS.length)];
    if (kind === 0) { api = NOBODY[ri(NOBODY.length)]; body = bytes(ri(300)); }
    else if (kind === 1) { api = s[0]; body = s[1].subarray(0, ri(s[1].length)); mustFail = false; }
    else if (kind === 2) {
      api = s[0]; body = Buffer.from(s[1]);
      for (let k = 1 + ri(3); k > 0; k--) body[ri(body.length)] ^= 1 << ri(8);
      mustFail = false;
    }
    else if (kind === 3) { api = 'GetRow'; body = badChecksum(); }
    else if (kind === 4) { api = 'X' + bytes(4).toString('hex'); body = s[1]; }
    else if (kind === 5) { api = s[0]; body = s[1]; sk = 'wrong-' + ri(1000); }
    else if (kind === 6) { api = 'GetRow'; body = trailing(); }
    else { api = s[0]; body = Buffer.concat([s[1], bytes(1 + ri(40))]); mustFail = false; }
    if (i % 20000 === 7) { api = 'PutRow'; body = bytes(5 * 1024 * 1024 + 1 + ri(1000)); }
    const r = await send(api, body, sk);
    counts[kind] = (counts[kind] || 0) + 1;
    if (r.error) { check('answered (kind ' + kind + ')', false, r.error); return; }
    const err = isError(r);
    check('error or 200 (kind ' + kind + ')', err || r.status === 200, [r.status, r.body.toString('hex').slice(0, 80)]);
    if (mustFail) check('an error response (kind ' + kind + ')', err, [api, r.status]);
    check('signed response', /^OTS /.test(r.headers.authorization || ''), r.headers);
  }
  const workers = [];
  for (let w = 0; w < 8; w++) {
    workers.push((async () => { while (i < N) { i++; await one(); } })());
  }
  await Promise.all(workers);
  const after = await snapshot();
  check('nothing changed', JSON.stringify(before) === JSON.stringify(after),
    Object.keys(before).filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k])));
  console.log('fuzz: ' + i + ' requests, by kind ' + JSON.stringify(counts));
  const names = Object.keys(seen), failed = Object.keys(fails).length;
  for (const n of Object.keys(fails)) console.log('FAIL ' + n + ': ' + fails[n] + ' requests');
  console.log((names.length - failed) + ' passed, ' + failed + ' failed');
  process.exit(failed === 0 ? 0 : 1);
})();
