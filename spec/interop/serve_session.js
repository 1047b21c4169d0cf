// spec/interop/serve_session.js -- the official Node SDK (tablestore@5.6.5)
// against `otskit serve`: a scripted session over every operation, checking
// every answer. Run by spec/interop/serve_test.sh with OTSKIT_URL,
// OTSKIT_AK, OTSKIT_SK, OTSKIT_INSTANCE and NODE_PATH (build/node).
// Prints "N passed, N failed" last; exits non-zero on a failure.
'use strict';
const TableStore = require('tablestore');
const crypto = require('crypto');
const http = require('http');
const protos = require('tablestore/lib/protocol/tablestore_compiled_proto.js').main.proto;

const URL_ = process.env.OTSKIT_URL, AK = process.env.OTSKIT_AK, SK = process.env.OTSKIT_SK;
const INST = process.env.OTSKIT_INSTANCE;
const Long = TableStore.Long;
const INF_MIN = TableStore.INF_MIN, INF_MAX = TableStore.INF_MAX;
const RE = TableStore.RowExistenceExpectation;

let passed = 0, failed = 0;
function check(name, ok, detail) {
  if (ok) { passed++; return; }
  failed++;
  console.log('FAIL ' + name + (detail !== undefined ? ': ' + (typeof detail === 'string' ? detail : JSON.stringify(detail)) : ''));
}

function client(opts) {
  return new TableStore.Client(Object.assign({
    accessKeyId: AK, secretAccessKey: SK, endpoint: URL_, instancename: INST, maxRetries: 0,
  }, opts || {}));
}
const c = client();
// call(op, params) -> { err, data }
function call(cl, op, params) {
  return new Promise((resolve) => cl[op](params, (err, data) => resolve({ err, data })));
}
// the service's error code inside the SDK's error (the raw protobuf body)
function codeOf(err) {
  if (!err) return null;
  const m = String(err.message).match(/(OTS[A-Za-z]+)/);
  return m ? m[1] : String(err.code);
}
function expectErr(name, r, status, code, msgPart) {
  check(name + ' fails', !!r.err, r.data);
  if (!r.err) return;
  check(name + ' status ' + status, r.err.code === status, r.err.code);
  check(name + ' code ' + code, codeOf(r.err) === code, r.err.message);
  if (msgPart) check(name + ' message', String(r.err.message).includes(msgPart), r.err.message);
}
const Int64LE = require('int64-buffer').Int64LE;
const num = (v) => (v && typeof v.toNumber === 'function' ? v.toNumber() : v);
const cond = (e, cc) => new TableStore.Condition(e, cc || null);
const attrs = (row) => {
  const out = {};
  for (const a of (row && row.attributes) || []) out[a.columnName] = a.columnValue;
  return out;
};

// a raw signed request, for what the SDK cannot send
function raw(api, body, o) {
  o = o || {};
  body = body || Buffer.alloc(0);
  const md5 = crypto.createHash('md5').update(body).digest('base64');
  const h = {
    'x-ots-date': o.date || new Date().toISOString(), 'x-ots-apiversion': '2015-12-31',
    'x-ots-accesskeyid': AK, 'x-ots-instancename': INST, 'x-ots-contentmd5': o.md5 || md5,
  };
  const names = Object.keys(h).sort();
  const sts = '/' + api + '\nPOST\n\n' + names.map((n) => n + ':' + h[n] + '\n').join('');
  h['x-ots-signature'] = crypto.createHmac('sha1', o.sk || SK).update(sts).digest('base64');
  for (const k of o.drop || []) delete h[k];
  const u = new URL(URL_);
  return new Promise((resolve) => {
    const req = http.request({ host: u.hostname, port: u.port, method: o.method || 'POST', path: '/' + api,
      headers: Object.assign(h, { 'content-length': body.length }) }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', (e) => resolve({ error: e }));
    req.end(body);
  });
}
function rawErr(r) {
  try { return protos.Error.decode(r.body); } catch (e) { return { code: 'undecodable', message: String(e) }; }
}
function admin(method, body) {
  const u = new URL(URL_);
  return new Promise((resolve) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path: '/_otskit/faults',
      headers: { 'x-otskit-admin-token': process.env.OTSKIT_ADMIN_TOKEN || '' } }, (res) => {
      let s = ''; res.on('data', (d) => { s += d; }); res.on('end', () => resolve({ status: res.statusCode, body: s }));
    });
    req.on('error', (e) => resolve({ error: e }));
    req.end(body || '');
  });
}

async function tables() {
  let r = await call(c, 'listTable', {});
  check('listTable', !r.err && Array.isArray(r.data.tableNames), r.err && r.err.message);
  const before = r.data ? r.data.tableNames.length : 0;
  for (const t of ['orders', 'other', 'big']) {
    r = await call(c, 'createTable', {
      tableMeta: { tableName: t, primaryKey: t === 'big' ? [{ name: 'id', type: 'INTEGER' }]
        : [{ name: 'user', type: 'STRING' }, { name: 'seq', type: 'INTEGER' }] },
      reservedThroughput: { capacityUnit: { read: 0, write: 0 } },
      tableOptions: { timeToLive: -1, maxVersions: 1 },
    });
    check('createTable ' + t, !r.err, r.err && r.err.message);
  }
  r = await call(c, 'createTable', {
    tableMeta: { tableName: 'orders', primaryKey: [{ name: 'user', type: 'STRING' }] },
    reservedThroughput: { capacityUnit: { read: 0, write: 0 } }, tableOptions: { timeToLive: -1, maxVersions: 1 },
  });
  expectErr('createTable twice', r, 409, 'OTSObjectAlreadyExist');
  r = await call(c, 'listTable', {});
  check('listTable lists 3 more', !r.err && r.data.tableNames.length === before + 3 &&
    ['orders', 'other', 'big'].every((t) => r.data.tableNames.includes(t)), r.data);
  r = await call(c, 'describeTable', { tableName: 'orders' });
  check('describeTable', !r.err, r.err && r.err.message);
  if (!r.err) {
    const m = r.data.tableMeta;
    check('describeTable name', m.tableName === 'orders', m);
    check('describeTable pk', m.primaryKey.length === 2 && m.primaryKey[0].name === 'user' && m.primaryKey[0].type === 2 &&
      m.primaryKey[1].name === 'seq' && m.primaryKey[1].type === 1, m.primaryKey);
    check('describeTable status', r.data.tableStatus === 1, r.data.tableStatus);
    check('describeTable throughput', r.data.reservedThroughputDetails && r.data.reservedThroughputDetails.capacityUnit, r.data);
  }
  r = await call(c, 'updateTable', { tableName: 'other', tableOptions: { maxVersions: 3, timeToLive: -1 } });
  check('updateTable', !r.err, r.err && r.err.message);
  r = await call(c, 'describeTable', { tableName: 'other' });
  check('updateTable applied', !r.err && r.data.tableOptions && r.data.tableOptions.maxVersions === 3, r.err ? r.err.message : r.data.tableOptions);
  r = await call(c, 'describeTable', { tableName: 'nope' });
  expectErr('describeTable missing', r, 404, 'OTSObjectNotExist');
}

async function rows() {
  const pk = [{ user: 'u1' }, { seq: Long.fromNumber(1) }];
  let r = await call(c, 'putRow', { tableName: 'orders', condition: cond(RE.IGNORE), primaryKey: pk,
    attributeColumns: [{ s: 'v' }, { i: Long.fromNumber(7) }, { d: 1.5 }, { b: true }, { x: Buffer.from([1, 2, 0]) }],
    returnContent: { returnType: TableStore.ReturnType.Primarykey } });
  check('putRow', !r.err, r.err && r.err.message);
  if (!r.err) {
    check('putRow consumed write', num(r.data.consumed.capacityUnit.write) >= 1, r.data.consumed);
    const rp = r.data.row && r.data.row.primaryKey;
    check('putRow returns the pk', rp && rp.length === 2 && rp[0].value === 'u1' && num(rp[1].value) === 1, r.data.row);
  }
  r = await call(c, 'getRow', { tableName: 'orders', primaryKey: pk, maxVersions: 1 });
  check('getRow', !r.err && r.data.row && r.data.row.primaryKey, r.err ? r.err.message : r.data);
  if (!r.err && r.data.row.attributes) {
    const a = attrs(r.data.row);
    check('getRow string', a.s === 'v', a);
    check('getRow integer', Int64LE.isInt64LE(a.i) && a.i.toNumber() === 7, a.i);
    check('getRow double', a.d === 1.5, a.d);
    check('getRow boolean', a.b === true, a.b);
    check('getRow binary', Buffer.isBuffer(a.x) && a.x.equals(Buffer.from([1, 2, 0])), a.x);
    check('getRow timestamps', r.data.row.attributes.every((x) => x.timestamp && num(x.timestamp) > 1.6e12), r.data.row.attributes);
    check('getRow consumed read', num(r.data.consumed.capacityUnit.read) >= 1, r.data.consumed);
  }
  r = await call(c, 'getRow', { tableName: 'orders', primaryKey: pk, maxVersions: 1, columnsToGet: ['s', 'nothere'] });
  check('getRow columnsToGet', !r.err && Object.keys(attrs(r.data.row)).join() === 's', r.data && r.data.row);
  r = await call(c, 'getRow', { tableName: 'orders', primaryKey: [{ user: 'zz' }, { seq: Long.fromNumber(1) }], maxVersions: 1 });
  check('getRow absent row', !r.err && r.data.row && r.data.row.primaryKey === undefined, r.data);

  // conditions
  r = await call(c, 'putRow', { tableName: 'orders', condition: cond(RE.EXPECT_NOT_EXIST), primaryKey: pk, attributeColumns: [{ s: 'w' }] });
  expectErr('putRow EXPECT_NOT_EXIST on a row', r, 403, 'OTSConditionCheckFail', 'Condition check failed.');
  r = await call(c, 'updateRow', { tableName: 'orders', condition: cond(RE.EXPECT_EXIST,
    new TableStore.SingleColumnCondition('s', 'other', TableStore.ComparatorType.EQUAL)), primaryKey: pk,
    updateOfAttributeColumns: [{ PUT: [{ s: 'w' }] }] });
  expectErr('updateRow column condition false', r, 403, 'OTSConditionCheckFail');
  const both = new TableStore.CompositeCondition(TableStore.LogicalOperator.AND);
  both.addSubCondition(new TableStore.SingleColumnCondition('s', 'v', TableStore.ComparatorType.EQUAL));
  both.addSubCondition(new TableStore.SingleColumnCondition('i', Long.fromNumber(5), TableStore.ComparatorType.GREATER_THAN));
  // increments with return content
  r = await call(c, 'updateRow', { tableName: 'orders', condition: cond(RE.EXPECT_EXIST, both), primaryKey: pk,
    updateOfAttributeColumns: [{ PUT: [{ s: 'w' }] }, { DELETE_ALL: ['d'] }, { INCREMENT: [{ i: Long.fromNumber(3) }] }],
    returnContent: { returnType: TableStore.ReturnType.AfterModify, returnColumns: ['i'] } });
  check('updateRow with a composite condition + increment', !r.err, r.err && r.err.message);
  if (!r.err) {
    const a = attrs(r.data.row);
    check('updateRow returns the incremented value', a.i && num(a.i) === 10 && a.s === undefined, r.data.row);
  }
  r = await call(c, 'getRow', { tableName: 'orders', primaryKey: pk, maxVersions: 1 });
  if (!r.err) {
    const a = attrs(r.data.row);
    check('updateRow applied', a.s === 'w' && a.d === undefined && num(a.i) === 10 && a.b === true, a);
  }
  r = await call(c, 'updateRow', { tableName: 'orders', condition: cond(RE.IGNORE), primaryKey: pk,
    updateOfAttributeColumns: [{ INCREMENT: [{ s: Long.fromNumber(1) }] }] });
  expectErr('increment of a string', r, 400, 'OTSParameterInvalid');
  r = await call(c, 'putRow', { tableName: 'orders', condition: cond(RE.IGNORE), primaryKey: [{ user: 'u1' }, { seq: 'notint' }], attributeColumns: [{ s: 'v' }] });
  expectErr('putRow wrong pk type', r, 400, 'OTSInvalidPK');
  r = await call(c, 'putRow', { tableName: 'nope', condition: cond(RE.IGNORE), primaryKey: pk, attributeColumns: [{ s: 'v' }] });
  expectErr('putRow missing table', r, 404, 'OTSObjectNotExist');
  r = await call(c, 'deleteRow', { tableName: 'orders', condition: cond(RE.EXPECT_EXIST), primaryKey: pk });
  check('deleteRow', !r.err, r.err && r.err.message);
  r = await call(c, 'getRow', { tableName: 'orders', primaryKey: pk, maxVersions: 1 });
  check('deleteRow removed the row', !r.err && r.data.row.primaryKey === undefined, r.data);
  r = await call(c, 'deleteRow', { tableName: 'orders', condition: cond(RE.EXPECT_EXIST), primaryKey: pk });
  expectErr('deleteRow EXPECT_EXIST on nothing', r, 403, 'OTSConditionCheckFail');
}

async function batches() {
  const P = (u, s) => [{ user: u }, { seq: Long.fromNumber(s) }];
  let r = await call(c, 'batchWriteRow', { tables: [
    { tableName: 'orders', rows: [
      { type: 'PUT', condition: cond(RE.IGNORE), primaryKey: P('a', 1), attributeColumns: [{ n: Long.fromNumber(1) }], returnContent: { returnType: TableStore.ReturnType.Primarykey } },
      { type: 'PUT', condition: cond(RE.IGNORE), primaryKey: P('a', 2), attributeColumns: [{ n: Long.fromNumber(2) }] },
      { type: 'DELETE', condition: cond(RE.EXPECT_EXIST), primaryKey: P('gone', 9), attributeColumns: [] },
    ] },
    { tableName: 'other', rows: [
      { type: 'PUT', condition: cond(RE.IGNORE), primaryKey: P('b', 1), attributeColumns: [{ n: Long.fromNumber(3) }] },
      { type: 'UPDATE', condition: cond(RE.EXPECT_EXIST), primaryKey: P('b', 2), attributeColumns: [{ PUT: [{ n: Long.fromNumber(4) }] }] },
    ] },
  ] });
  check('batchWriteRow', !r.err, r.err && r.err.message);
  if (!r.err) {
    const t = r.data.tables;
    check('batchWriteRow one result per row', t.length === 5, t.length);
    if (t.length === 5) {
      check('batchWriteRow tables in order', t[0].tableName === 'orders' && t[3].tableName === 'other', t.map((x) => x.tableName));
      check('batchWriteRow ok rows', t[0].isOk && t[1].isOk && t[3].isOk, t);
      check('batchWriteRow ok row returns its pk', t[0].primaryKey && t[0].primaryKey[0].value === 'a', t[0]);
      check('batchWriteRow failed DELETE', !t[2].isOk && t[2].errorCode === 'OTSConditionCheckFail' && t[2].errorMessage, t[2]);
      check('batchWriteRow failed UPDATE', !t[4].isOk && t[4].errorCode === 'OTSConditionCheckFail', t[4]);
    }
  }
  r = await call(c, 'batchGetRow', { tables: [
    { tableName: 'orders', primaryKey: [P('a', 1), P('a', 2), P('gone', 9)], maxVersions: 1 },
    { tableName: 'other', primaryKey: [P('b', 1), P('b', 2)], maxVersions: 1, columnsToGet: ['n'] },
  ] });
  check('batchGetRow', !r.err, r.err && r.err.message);
  if (!r.err) {
    const [t1, t2] = r.data.tables;
    check('batchGetRow per table', r.data.tables.length === 2 && t1.length === 3 && t2.length === 2, r.data.tables);
    if (t1 && t2) {
      check('batchGetRow values', t1[0].isOk && num(attrs(t1[0]).n) === 1 && num(attrs(t1[1]).n) === 2 && num(attrs(t2[0]).n) === 3, [t1, t2]);
      check('batchGetRow absent rows', t1[2].isOk && t1[2].primaryKey === null && t2[1].isOk && t2[1].primaryKey === null, [t1[2], t2[1]]);
    }
  }
  r = await call(c, 'batchGetRow', { tables: [{ tableName: 'orders', primaryKey: [[{ user: 1 }, { seq: Long.fromNumber(1) }]], maxVersions: 1 }] });
  check('batchGetRow bad pk fails', !!r.err || (r.data.tables[0][0] && !r.data.tables[0][0].isOk), r.data);
  const many = [];
  for (let i = 0; i < 101; i++) many.push(P('m', i));
  r = await call(c, 'batchGetRow', { tables: [{ tableName: 'orders', primaryKey: many, maxVersions: 1 }] });
  expectErr('batchGetRow over 100 rows', r, 400, 'OTSParameterInvalid');
  r = await call(c, 'batchGetRow', { tables: [{ tableName: 'nope', primaryKey: [P('a', 1)], maxVersions: 1 }] });
  check('batchGetRow missing table fails', !!r.err || !r.data.tables[0][0].isOk, r.data);
}

async function ranges() {
  const N = 6001;
  const batches = [];
  for (let i = 0; i < N; i += 200) {
    const rows_ = [];
    for (let j = i; j < Math.min(N, i + 200); j++) {
      rows_.push({ type: 'PUT', condition: cond(RE.IGNORE), primaryKey: [{ id: Long.fromNumber(j) }],
        attributeColumns: [{ v: Long.fromNumber(j % 10) }, { pad: 'x'.repeat(20) }] });
    }
    batches.push({ tables: [{ tableName: 'big', rows: rows_ }] });
  }
  let okRows = 0;
  for (let i = 0; i < batches.length; i += 4) {
    const rs = await Promise.all(batches.slice(i, i + 4).map((b) => call(c, 'batchWriteRow', b)));
    for (const r of rs) if (!r.err) okRows += r.data.tables.filter((x) => x.isOk).length;
  }
  check('loaded ' + N + ' rows', okRows === N, okRows);
  for (const dir of ['FORWARD', 'BACKWARD']) {
    for (const limit of [undefined, 777]) {
      const fw = dir === 'FORWARD';
      let start = [{ id: fw ? INF_MIN : INF_MAX }];
      const end = [{ id: fw ? INF_MAX : INF_MIN }];
      const got = [];
      let pages = 0, bad = null;
      for (;;) {
        const r = await call(c, 'getRange', { tableName: 'big', direction: dir, inclusiveStartPrimaryKey: start,
          exclusiveEndPrimaryKey: end, limit, maxVersions: 1 });
        if (r.err) { bad = r.err.message; break; }
        pages++;
        if (pages === 1 && limit === undefined && r.data.rows.length !== 5000) bad = 'first page ' + r.data.rows.length;
        if (limit && r.data.rows.length > limit) bad = 'page over limit';
        for (const row of r.data.rows) got.push(num(row.primaryKey[0].value));
        if (!r.data.nextStartPrimaryKey) break;
        start = [{ id: r.data.nextStartPrimaryKey[0].value }];
        if (pages > 100) { bad = 'too many pages'; break; }
      }
      const name = 'getRange ' + dir + ' limit ' + limit;
      check(name + ' pages', bad === null, bad);
      let inOrder = got.length === N;
      for (let i = 0; inOrder && i < N; i++) inOrder = got[i] === (fw ? i : N - 1 - i);
      check(name + ' every row once, in order', inOrder, got.length);
      check(name + ' page count', pages === (limit ? Math.ceil(N / limit) : 2), pages);
    }
  }
  // a sub-range with a filter
  const r = await call(c, 'getRange', { tableName: 'big', direction: 'FORWARD',
    inclusiveStartPrimaryKey: [{ id: Long.fromNumber(100) }], exclusiveEndPrimaryKey: [{ id: Long.fromNumber(200) }],
    maxVersions: 1, columnFilter: new TableStore.SingleColumnCondition('v', Long.fromNumber(3), TableStore.ComparatorType.EQUAL) });
  check('getRange with a filter', !r.err && r.data.rows.length === 10 && r.data.rows.every((x) => num(attrs(x).v) === 3),
    r.err ? r.err.message : r.data.rows.length);
  let e = await call(c, 'getRange', { tableName: 'big', direction: 'FORWARD', inclusiveStartPrimaryKey: [{ id: Long.fromNumber(9) }],
    exclusiveEndPrimaryKey: [{ id: Long.fromNumber(1) }], maxVersions: 1 });
  expectErr('getRange begin after end', e, 400, 'OTSParameterInvalid');
  e = await call(c, 'getRange', { tableName: 'nope', direction: 'FORWARD', inclusiveStartPrimaryKey: [{ id: INF_MIN }],
    exclusiveEndPrimaryKey: [{ id: INF_MAX }], maxVersions: 1 });
  expectErr('getRange missing table', e, 404, 'OTSObjectNotExist');
}

async function wireLevel() {
  // response headers and their signature (what the Java and Python SDKs check)
  let r = await raw('ListTable');
  check('raw ListTable 200', r.status === 200, r.status);
  const h = r.headers;
  check('x-ots-contentmd5 is the body MD5', h['x-ots-contentmd5'] === crypto.createHash('md5').update(r.body).digest('base64'), h);
  check('x-ots-requestid', /^[0-9a-f-]{36}$/.test(h['x-ots-requestid'] || ''), h['x-ots-requestid']);
  check('x-ots-date has a fraction', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{1,6}Z$/.test(h['x-ots-date'] || ''), h['x-ots-date']);
  check('x-ots-contenttype', h['x-ots-contenttype'] === 'protocol buffer', h['x-ots-contenttype']);
  check('no compression', !h['content-encoding'], h['content-encoding']);
  const canon = Object.keys(h).filter((k) => k.startsWith('x-ots-')).sort().map((k) => k + ':' + h[k].trim() + '\n').join('') + '/ListTable';
  const sig = crypto.createHmac('sha1', SK).update(canon).digest('base64');
  check('authorization signs the response', h.authorization === 'OTS ' + AK + ':' + sig, h.authorization);
  r = await raw('GetRow', Buffer.from('x'), { sk: 'wrong' });
  check('bad signature 403 OTSAuthFailed', r.status === 403 && rawErr(r).code === 'OTSAuthFailed', [r.status, rawErr(r)]);
  check('a signed error response', /^OTS /.test(r.headers.authorization || ''), r.headers);
  r = await raw('ListTable', null, { date: new Date(Date.now() - 20 * 60000).toISOString() });
  check('x-ots-date 20 min off', r.status === 403 && rawErr(r).message === 'Mismatch between system time and x-ots-date.', rawErr(r));
  r = await raw('ListTable', null, { date: '2026-11-23T14:05:09.11232Z'.replace('2026-11-23T14:05:09', new Date().toISOString().slice(0, 19)) });
  check('the Go SDK date fraction is accepted', r.status === 200, [r.status, rawErr(r)]);
  r = await raw('ListTable', Buffer.alloc(0), { md5: crypto.createHash('md5').update('other').digest('base64') });
  check('content MD5 mismatch', r.status === 403 && /MD5/.test(rawErr(r).message), rawErr(r));
  r = await raw('ListTable', null, { drop: ['x-ots-date'] });
  check('missing header', r.status === 400 && rawErr(r).code === 'OTSParameterInvalid' && rawErr(r).message === 'Missing header: x-ots-date', rawErr(r));
  r = await raw('DropEverything');
  check('unknown API', r.status === 400 && rawErr(r).code === 'OTSParameterInvalid' && /Unsupported operation/.test(rawErr(r).message), rawErr(r));
  r = await raw('ListTable', null, { method: 'PUT' });
  check('method not allowed', r.status === 405 && rawErr(r).code === 'OTSMethodNotAllowed', [r.status, rawErr(r)]);
  r = await raw('PutRow', crypto.randomBytes(6 * 1024 * 1024));
  check('body over the limit 413', r.status === 413 && rawErr(r).code === 'OTSRequestBodyTooLarge', [r.status, r.error && String(r.error)]);
  const bad = client({ secretAccessKey: 'not-the-secret' });
  let s = await call(bad, 'listTable', {});
  expectErr('SDK with a wrong secret', s, 403, 'OTSAuthFailed', 'Signature mismatch.');
  s = await call(client({ accessKeyId: 'stranger' }), 'listTable', {});
  expectErr('SDK with an unknown access key', s, 403, 'OTSAuthFailed');

  // ComputeSplitPointsBySize (not in the Node SDK): raw protobuf
  const body = Buffer.from(protos.ComputeSplitPointsBySizeRequest.encode({ tableName: 'big', splitSize: 1 }).finish());
  r = await raw('ComputeSplitPointsBySize', body);
  check('ComputeSplitPointsBySize 200', r.status === 200, [r.status, rawErr(r)]);
  if (r.status === 200) {
    const d = protos.ComputeSplitPointsBySizeResponse.decode(r.body);
    check('ComputeSplitPointsBySize schema', d.schema.length === 1 && d.schema[0].name === 'id', d.schema);
    check('ComputeSplitPointsBySize locations cover the splits', d.locations.length >= 1 &&
      d.locations.reduce((a, l) => a + num(l.repeat), 0) === d.splitPoints.length + 1, d);
  }
}

async function faults() {
  let a = await admin('PUT', 'rate=1,code=OTSServerBusy,apis=GetRow');
  check('admin sets faults', a.status === 200 && JSON.parse(a.body).enabled === true, a);
  let r = await call(c, 'getRow', { tableName: 'orders', primaryKey: [{ user: 'a' }, { seq: Long.fromNumber(1) }], maxVersions: 1 });
  expectErr('injected OTSServerBusy', r, 503, 'OTSServerBusy');
  r = await call(c, 'listTable', {});
  check('faults only on the chosen APIs', !r.err, r.err && r.err.message);
  a = await admin('PUT', 'latency=150,apis=ListTable');
  const t0 = Date.now();
  r = await call(c, 'listTable', {});
  check('injected latency', !r.err && Date.now() - t0 >= 140, Date.now() - t0);
  a = await admin('PUT', 'drop=1,apis=ListTable');
  r = await call(c, 'listTable', {});
  check('dropped connection', !!r.err && codeOf(r.err) !== 'OTSServerBusy', r.err && r.err.message);
  a = await admin('PUT', 'rate=2');
  check('admin refuses a bad spec', a.status === 400, a);
  a = await admin('DELETE');
  check('admin clears faults', a.status === 200 && JSON.parse(a.body).enabled === false, a);
  r = await call(c, 'getRow', { tableName: 'orders', primaryKey: [{ user: 'a' }, { seq: Long.fromNumber(1) }], maxVersions: 1 });
  check('no faults after clearing', !r.err && num(attrs(r.data.row).n) === 1, r.err && r.err.message);
}

async function cleanup() {
  let r = await call(c, 'deleteTable', { tableName: 'other' });
  check('deleteTable', !r.err, r.err && r.err.message);
  r = await call(c, 'listTable', {});
  check('deleteTable removed it', !r.err && !r.data.tableNames.includes('other'), r.data);
  r = await call(c, 'deleteTable', { tableName: 'other' });
  expectErr('deleteTable twice', r, 404, 'OTSObjectNotExist');
}

(async () => {
  const only = process.argv[2];
  const steps = { tables, rows, batches, ranges, wireLevel, faults, cleanup };
  for (const [name, fn] of Object.entries(steps)) {
    if (only && only !== name) continue;
    try { await fn(); } catch (e) { check(name + ' threw', false, e && e.stack); }
  }
  console.log(passed + ' passed, ' + failed + ' failed');
  process.exit(failed === 0 ? 0 : 1);
})();
