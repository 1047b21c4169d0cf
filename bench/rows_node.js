// bench/rows_node.js FILE REPS [ROWS_OUT] -- the official Node.js SDK's side
// of bench/rows_decode.lua (run by it as a child process once per round):
// decodes the GetRange response in FILE with the SDK's decoder REPS times
// after 5 untimed runs (V8 optimizes the SDK's code), a full GC before each
// timed run when node runs with --expose-gc, as the Lua side does. Prints
// one JSON line: the CPU milliseconds (user + system, as os.clock) of each
// run. ROWS_OUT: also write the decoded rows as text lines there (for the
// equality check). NODE_PATH must reach build/node/node_modules.
'use strict';
const TS = require('tablestore');
const fs = require('fs');
const file = process.argv[2], reps = +process.argv[3] || 5, out = process.argv[4];
const body = fs.readFileSync(file);
const gc = typeof global.gc === 'function' ? global.gc : () => {};

for (let w = 0; w < 5; w++) TS.decoder.decode('getRange', body);
const ms = [];
let res;
for (let r = 0; r < reps; r++) {
  gc();
  const c0 = process.cpuUsage();
  res = TS.decoder.decode('getRange', body);
  const c = process.cpuUsage(c0);
  ms.push((c.user + c.system) / 1e3);
}

function text(v) {
  if (Buffer.isBuffer(v)) return 'b:' + v.toString('hex');
  if (typeof v === 'string') return 's:' + v;
  if (typeof v === 'boolean') return 'o:' + v;
  if (typeof v === 'number') return 'd:' + v;
  return 'i:' + v.toString();
}
if (out) {
  const lines = [];
  for (const row of res.rows) {
    const cells = row.primaryKey.map(c => c.name + '=' + text(c.value));
    for (const a of row.attributes) cells.push(a.columnName + '=' + text(a.columnValue) + '@' + a.timestamp.toString());
    lines.push(cells.join(' '));
  }
  fs.writeFileSync(out, lines.join('\n') + '\n');
}
console.log(JSON.stringify({ ms: ms, node: process.version, rows: res.rows.length }));
