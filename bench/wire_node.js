// bench/wire_node.js DIR REPS -- the official Node.js SDK's side of
// bench/wire_bench.lua (run by it as a child process): decodes
// DIR/getrange.bin with the SDK's decoder and encodes the batch described
// by DIR/batch.json with the SDK's encoder, REPS times each, timing inside
// this process. Writes DIR/node_rows.txt (the decoded rows as text lines,
// for the equality check) and DIR/node_batch.bin; prints one JSON line of
// median milliseconds. NODE_PATH must reach build/node/node_modules.
'use strict';
const TS = require('tablestore');
const fs = require('fs');
const dir = process.argv[2], reps = +process.argv[3] || 7;

function median(xs) { const s = xs.slice().sort((a, b) => a - b); return s[s.length >> 1]; }
// a few untimed runs first: V8 optimizes the SDK's code before timing
function time(fn) {
  const per = [];
  let out;
  for (let w = 0; w < 3; w++) fn();
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    out = fn();
    per.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return [median(per), out, Math.min(...per), Math.max(...per)];
}

function text(v) {
  if (Buffer.isBuffer(v)) return 'b:' + v.toString('hex');
  if (typeof v === 'string') return 's:' + v;
  if (typeof v === 'boolean') return 'o:' + v;
  if (typeof v === 'number') return 'd:' + v;
  return 'i:' + v.toString();
}

// decode
const body = fs.readFileSync(dir + '/getrange.bin');
const [dms, res, dmin, dmax] = time(() => TS.decoder.decode('getRange', body));
const lines = [];
for (const row of res.rows) {
  const cells = row.primaryKey.map(c => c.name + '=' + text(c.value));
  for (const a of row.attributes) cells.push(a.columnName + '=' + text(a.columnValue) + '@' + a.timestamp.toString());
  lines.push(cells.join(' '));
}
fs.writeFileSync(dir + '/node_rows.txt', lines.join('\n') + '\n');

// encode: the batch from JSON into the SDK's params ({i: n} -> Long, {b: hex} -> Buffer)
function val(v) {
  if (v && typeof v === 'object') return v.i !== undefined ? TS.Long.fromString(String(v.i)) : Buffer.from(v.b, 'hex');
  return v;
}
const spec = JSON.parse(fs.readFileSync(dir + '/batch.json', 'utf8'));
const params = { tables: [{ tableName: spec.table, rows: spec.rows.map(r => ({
  type: 'PUT', condition: new TS.Condition(TS.RowExistenceExpectation.IGNORE, null),
  primaryKey: r.pk.map(([n, v]) => ({ [n]: val(v) })),
  attributeColumns: r.cols.map(([n, v, ts]) => ({ [n]: val(v), timestamp: ts })),
})) }] };
const [ems, ebody, emin, emax] = time(() => {
  const req = TS.encoder.encode('batchWriteRow', params);
  return Object.getPrototypeOf(req).constructor.encode(req).finish();
});
fs.writeFileSync(dir + '/node_batch.bin', Buffer.from(ebody));
console.log(JSON.stringify({ decode_ms: dms, decode_min: dmin, decode_max: dmax, encode_ms: ems, encode_min: emin, encode_max: emax, node: process.version }));
