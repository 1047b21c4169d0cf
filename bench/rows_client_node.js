// bench/rows_client_node.js ENDPOINT N -- the official Node.js SDK's side of
// bench/rows_client.lua (a child process per round): N GetRange calls of
// the whole `rows` table (5000 rows, one page) with the SDK's client
// against `otskit serve` at ENDPOINT (keys bak/bsk, instance bench), one
// after the other, after 2 untimed calls. Prints one JSON line: rows/s
// (wall) and the CPU ms of this process per call. NODE_PATH must reach
// build/node/node_modules.
'use strict';
const TS = require('tablestore');
const endpoint = process.argv[2], n = +process.argv[3] || 5;
const client = new TS.Client({ accessKeyId: 'bak', secretAccessKey: 'bsk', endpoint: endpoint,
  instancename: 'bench', maxRetries: 0 });
const lo = [{ region: TS.INF_MIN }, { user: TS.INF_MIN }, { device: TS.INF_MIN }, { seq: TS.INF_MIN }];
const hi = [{ region: TS.INF_MAX }, { user: TS.INF_MAX }, { device: TS.INF_MAX }, { seq: TS.INF_MAX }];
function page() {
  return new Promise((ok, fail) => client.getRange({ tableName: 'rows', direction: TS.Direction.FORWARD,
    inclusiveStartPrimaryKey: lo, exclusiveEndPrimaryKey: hi, limit: 5000, maxVersions: 1 },
  (err, data) => err ? fail(err) : ok(data)));
}
(async () => {
  for (let w = 0; w < 2; w++) await page();
  let rows = 0;
  const c0 = process.cpuUsage(), t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) rows += (await page()).rows.length;
  const wall = Number(process.hrtime.bigint() - t0) / 1e9, c = process.cpuUsage(c0);
  console.log(JSON.stringify({ rows_per_s: rows / wall, cpu_ms: (c.user + c.system) / 1e3 / n, rows: rows / n }));
})().catch(e => { console.error(e); process.exit(1); });
