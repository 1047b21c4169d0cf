// The official Node.js SDK (tablestore@5.6.5) side of the codec
// cross-check (codec_test.sh). Uses the SDK's own encoders and readers.
//   node codec.js encode            -> JSON: the SDK's request bodies of the corpus
//   node codec.js check FILE.json   -> reads otskit's bodies; prints "ok"/"FAIL" lines
// NODE_PATH must reach build/node/node_modules.
'use strict';
const TS = require('tablestore');
const fs = require('fs');
const L = TS.Long;
const proto = require('tablestore/lib/protocol/tablestore_compiled_proto.js');
const P = proto.main.proto, F = proto.filter.proto;

const T = 1700000000000;
const big = () => L.fromString('4611686018427387904');
const C = (re, cc) => new TS.Condition(TS.RowExistenceExpectation[re], cc || null);
const single = (n, v, cmp, pim, lvo) => new TS.SingleColumnCondition(n, v, TS.ComparatorType[cmp], pim, lvo);
function composite(op, subs) {
  const c = new TS.CompositeCondition(TS.LogicalOperator[op]);
  subs.forEach(s => c.addSubCondition(s));
  return c;
}

// name -> [sdk operation, params]; the Lua side (codec.lua) has the same
// names in the store's vocabulary.
const corpus = {
  put_types: ['putRow', { tableName: 't', condition: C('IGNORE'),
    primaryKey: [{ pk1: 'a' }, { pk2: L.fromNumber(1) }, { pk3: Buffer.from([0, 1, 255]) }],
    attributeColumns: [{ s: 'v' }, { i: L.fromNumber(7) }, { d: 1.5 }, { b: true }, { f: false },
      { x: Buffer.from([1, 2]) }, { neg: L.fromNumber(-5) }, { big: big() }, { e: '' }, { u: 'h\u00e9llo' }] }],
  put_ts: ['putRow', { tableName: 't', condition: C('EXPECT_NOT_EXIST'), returnContent: { returnType: TS.ReturnType.Primarykey },
    primaryKey: [{ pk1: 'a' }], attributeColumns: [{ s: 'v', timestamp: T }, { i: L.fromNumber(2), timestamp: T + 1 }] }],
  put_autoinc: ['putRow', { tableName: 't', condition: C('IGNORE'),
    primaryKey: [{ pk1: 'a' }, { id: TS.PK_AUTO_INCR }], attributeColumns: [{ s: 'v' }] }],
  put_cc_single: ['putRow', { tableName: 't', condition: C('EXPECT_EXIST', single('i', L.fromNumber(10), 'GREATER_THAN')),
    primaryKey: [{ pk1: 'a' }], attributeColumns: [{ s: 'v' }] }],
  put_cc_composite: ['putRow', { tableName: 't',
    condition: C('IGNORE', composite('AND', [single('s', 'v2', 'EQUAL', false, false),
      composite('NOT', [single('d', 2.5, 'LESS_EQUAL')]), single('b', true, 'NOT_EQUAL')])),
    primaryKey: [{ pk1: 'a' }], attributeColumns: [{ s: 'v' }] }],
  get_row: ['getRow', { tableName: 't', primaryKey: [{ pk1: 'a' }, { pk2: L.fromNumber(-1) }],
    columnsToGet: ['s', 'i'], maxVersions: 3, timeRange: { startTime: T, endTime: T + 1000 },
    columnFilter: single('i', L.fromNumber(5), 'GREATER_EQUAL', true, true), startColumn: 'a', endColumn: 'z' }],
  get_row_specific: ['getRow', { tableName: 't', primaryKey: [{ pk1: 'a' }], timeRange: { specificTime: T } }],
  get_row_page: ['getRow', { tableName: 't', primaryKey: [{ pk1: 'a' }], columnFilter: new TS.ColumnPaginationFilter(2, 1) }], // (limit, offset)
  update_row: ['updateRow', { tableName: 't', condition: C('EXPECT_EXIST', single('n', L.fromNumber(0), 'LESS_THAN')),
    primaryKey: [{ pk1: 'a' }],
    updateOfAttributeColumns: [{ PUT: [{ s: 'v' }, { p: 'w', timestamp: T }] }, { DELETE: [{ s: T }] },
      { DELETE_ALL: ['t', 'u'] }, { INCREMENT: [{ n: L.fromNumber(1) }] }],
    returnContent: { returnType: TS.ReturnType.AfterModify, returnColumns: ['n'] } }],
  delete_row: ['deleteRow', { tableName: 't', condition: C('EXPECT_EXIST'), primaryKey: [{ pk1: 'a' }, { pk2: L.fromNumber(2) }],
    returnContent: { returnType: TS.ReturnType.Primarykey } }],
  get_range_inf: ['getRange', { tableName: 't', direction: 'FORWARD', limit: 100, columnsToGet: ['s'],
    inclusiveStartPrimaryKey: [{ pk1: TS.INF_MIN }, { pk2: TS.INF_MIN }],
    exclusiveEndPrimaryKey: [{ pk1: TS.INF_MAX }, { pk2: TS.INF_MAX }] }],
  get_range_back: ['getRange', { tableName: 't', direction: 'BACKWARD', maxVersions: 2,
    inclusiveStartPrimaryKey: [{ pk1: 'z' }, { pk2: TS.INF_MAX }], exclusiveEndPrimaryKey: [{ pk1: 'a' }, { pk2: L.fromNumber(3) }],
    timeRange: { startTime: 0, endTime: T }, columnFilter: composite('OR', [single('s', 'x', 'EQUAL'), single('i', L.fromNumber(1), 'EQUAL')]) }],
  batch_get_row: ['batchGetRow', { tables: [
    { tableName: 't', primaryKey: [[{ pk1: 'a' }], [{ pk1: 'b' }]], columnsToGet: ['s'] },
    { tableName: 'u', primaryKey: [[{ id: L.fromNumber(9) }]], maxVersions: 2, startColumn: 'c' }] }],
  batch_write_row: ['batchWriteRow', { tables: [
    { tableName: 't', rows: [
      { type: 'PUT', condition: C('IGNORE'), primaryKey: [{ pk1: 'a' }], attributeColumns: [{ s: 'v' }, { i: L.fromNumber(3), timestamp: T }],
        returnContent: { returnType: TS.ReturnType.Primarykey } },
      { type: 'UPDATE', condition: C('EXPECT_EXIST'), primaryKey: [{ pk1: 'b' }],
        attributeColumns: [{ PUT: [{ s: 'w' }] }, { DELETE_ALL: ['x'] }] },
      { type: 'DELETE', condition: C('IGNORE', single('s', 'v', 'EQUAL')), primaryKey: [{ pk1: 'c' }] }] },
    { tableName: 'u', rows: [{ type: 'PUT', condition: C('EXPECT_NOT_EXIST'), primaryKey: [{ id: L.fromNumber(1) }], attributeColumns: [{ d: 0.25 }] }] }] }],
  create_table: ['createTable', { tableMeta: { tableName: 't', primaryKey: [{ name: 'pk1', type: 'STRING' },
    { name: 'id', type: 'INTEGER', option: 'AUTO_INCREMENT' }, { name: 'b', type: 'BINARY' }] },
    reservedThroughput: { capacityUnit: { read: 0, write: 0 } },
    tableOptions: { timeToLive: -1, maxVersions: 3, maxTimeDeviation: 86400 } }],
  update_table: ['updateTable', { tableName: 't', tableOptions: { timeToLive: 86400, maxVersions: 2 },
    reservedThroughput: { capacityUnit: { read: 1, write: 2 } } }],
  describe_table: ['describeTable', { tableName: 't' }],
  delete_table: ['deleteTable', { tableName: 't' }],
  list_table: ['listTable', {}],
};
// an SDK defect: a non-ASCII column name gets its UTF-16 length (1 for
// 'é') before its UTF-8 bytes (2): a corrupt PlainBuffer
const defects = {
  defect_nonascii_name: ['putRow', { tableName: 't', condition: C('IGNORE'), primaryKey: [{ pk1: 'a' }], attributeColumns: [{ '\u00e9': 'v' }] }],
};

function sdkBody(op, params) {
  const req = TS.encoder.encode(op, params);
  return Buffer.from(Object.getPrototypeOf(req).constructor.encode(req).finish());
}

// ---- canonical forms of what the SDK reads, for comparing two bodies
function canonValue(v) {
  if (v === TS.INF_MIN) return 'INF_MIN';
  if (v === TS.INF_MAX) return 'INF_MAX';
  if (Buffer.isBuffer(v)) return { bin: v.toString('hex') };
  if (v && typeof v === 'object' && typeof v.toString === 'function' && v.buffer) return { int: v.toString() };
  return v;
}
function readRow(buf) {
  const b = Buffer.from(buf);
  if (b.length === 0) return null;
  const input = new TS.PlainBufferInputStream(b);
  const row = new TS.PlainBufferCodedInputStream(input).readRow();
  return { pk: row.primaryKey.map(c => [c.name, canonValue(c.value)]),
           attrs: (row.attributes || []).map(c => [c.columnName, canonValue(c.columnValue), c.timestamp == null ? null : canonValue(c.timestamp)]) };
}
const ROWFIELDS = { row: 1, rowChange: 1, primaryKey: 1, inclusiveStartPrimaryKey: 1, exclusiveEndPrimaryKey: 1 };
function readFilter(buf) {
  const f = F.Filter.decode(Buffer.from(buf));
  const M = { 1: F.SingleColumnValueFilter, 2: F.CompositeColumnValueFilter, 3: F.ColumnPaginationFilter }[f.type];
  const inner = M.toObject(M.decode(f.filter), { defaults: true });
  if (inner.subFilters) inner.subFilters = inner.subFilters.map(s => readFilter(F.Filter.encode(s).finish()));
  if (inner.columnValue) inner.columnValue = Buffer.from(inner.columnValue).toString('hex');
  return { type: f.type, inner };
}
// the request as the SDK's own protobuf and PlainBuffer readers see it
// (op cells: the SDK's reader cannot read them, so UpdateRow rows compare
// as their bytes up to the padding)
function canonRequest(api, body, update) {
  const M = P[api + 'Request'];
  const msg = M.decode(body);
  function walk(o, key) {
    if (o == null) return o;
    if (o instanceof Uint8Array) {
      if (ROWFIELDS[key]) {
        const bytes = () => 'bytes:' + Buffer.from(o).toString('hex').replace(/(00)+$/, '');
        if (update) return bytes();
        try { return readRow(o); } catch (e) {
          // the SDK's reader knows no INF_MIN/INF_MAX/AUTO_INCREMENT cells
          if (/Unsupported primary key type/.test(e.message)) return bytes();
          throw e;
        }
      }
      if (key === 'filter' || key === 'columnCondition') return readFilter(o);
      return Buffer.from(o).toString('hex');
    }
    if (Array.isArray(o)) return o.map(x => walk(x, key));
    if (typeof o === 'object' && typeof o.toNumber === 'function') return o.toString();
    if (typeof o === 'object') {
      const r = {};
      Object.keys(o).sort().forEach(k => { r[k] = walk(o[k], k); });
      return r;
    }
    return o;
  }
  return JSON.stringify(walk(M.toObject(msg, { longs: String }), ''));
}

const mode = process.argv[2];
if (mode === 'encode') {
  const out = {};
  const all = Object.assign({}, corpus, defects);
  for (const name of Object.keys(all)) {
    const [op, params] = all[name];
    out[name] = { api: op[0].toUpperCase() + op.slice(1), body: sdkBody(op, params).toString('hex') };
  }
  process.stdout.write(JSON.stringify(out));
} else if (mode === 'check') {
  // otskit's request bodies: the SDK's readers must see what they see in
  // the SDK's own bodies; otskit's response bodies: the SDK's decoder must
  // return the expected values.
  const ours = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
  let pass = 0, fail = 0;
  const ok = (c, what) => { if (c) pass++; else { fail++; console.log('FAIL ' + what); } };
  for (const name of Object.keys(ours.requests)) {
    const [op, params] = corpus[name];
    const api = op[0].toUpperCase() + op.slice(1);
    const upd = api === 'UpdateRow' || api === 'BatchWriteRow';
    let a, b;
    try { a = canonRequest(api, sdkBody(op, params), upd); b = canonRequest(api, Buffer.from(ours.requests[name], 'hex'), upd); }
    catch (e) { ok(false, 'request ' + name + ': ' + e.message); continue; }
    ok(a === b, 'request ' + name + ': the SDK reads otskit\'s body differently\n  sdk:    ' + a + '\n  otskit: ' + b);
  }
  for (const name of Object.keys(ours.responses)) {
    const r = ours.responses[name];
    let got;
    try {
      const d = TS.decoder.decode(r.op, Buffer.from(r.body, 'hex'));
      got = JSON.stringify(canonResponse(d));
    } catch (e) { ok(false, 'response ' + name + ': SDK decode failed: ' + e.message); continue; }
    ok(matches(r.expect, JSON.parse(got)), 'response ' + name + '\n  sdk decoded: ' + got + '\n  expected:    ' + JSON.stringify(r.expect));
  }
  console.log(pass + ' passed, ' + fail + ' failed');
  process.exit(fail ? 1 : 0);
}

// every key of want is in got with a matching value ({} from Lua's JSON
// encoder stands for an empty list)
function matches(want, got) {
  if (want === null) return got == null;
  if (typeof want !== 'object') return want === got;
  if (got === null || typeof got !== 'object') return false;
  const wk = Object.keys(want);
  if (Array.isArray(got) && !Array.isArray(want) && wk.length === 0) return got.length === 0;
  if (Array.isArray(want) && (!Array.isArray(got) || got.length !== want.length)) return false;
  return wk.every(k => matches(want[k], got[k]));
}

// the SDK's decoded responses as plain JSON (rows as [pk, attrs])
function canonRow(row) {
  if (!row || !row.primaryKey) return null;
  return { pk: row.primaryKey.map(c => [c.name, canonValue(c.value)]),
           attrs: (row.attributes || []).map(c => [c.columnName, canonValue(c.columnValue), c.timestamp == null ? null : canonValue(c.timestamp)]) };
}
function canonResponse(d) {
  function walk(o, key) {
    if (o == null) return null;
    if ((key === 'row') || (key === 'rows' && Array.isArray(o) && o.length && o[0].primaryKey)) return Array.isArray(o) ? o.map(canonRow) : canonRow(o);
    if (key === 'nextStartPrimaryKey') return o.map(c => [c.name, canonValue(c.value)]);
    if (Buffer.isBuffer(o) || o instanceof Uint8Array) return Buffer.from(o).toString('hex');
    if (Array.isArray(o)) return o.map(x => walk(x, key));
    if (typeof o === 'object' && typeof o.toNumber === 'function') return o.toString();
    if (typeof o === 'object' && o.buffer && typeof o.toString === 'function') return o.toString();
    if (typeof o === 'object') {
      const r = {};
      Object.keys(o).sort().forEach(k => { if (o[k] != null && k !== 'primaryKey' && k !== 'attributes' || (k === 'primaryKey' || k === 'attributes')) r[k] = walk(o[k], k); });
      return r;
    }
    return o;
  }
  return walk(d, '');
}
