// spec/interop/serve_durable.js -- what `otskit serve --data` acknowledged
// survives kill -9. `write FILE`: PutRow/UpdateRow with the official Node
// SDK from 8 concurrent loops until the server disappears (or 20000 rows),
// appending each acknowledged id to FILE only after its answer; `verify
// FILE`: every id in FILE reads back with its value. Prints "N passed, N failed".
'use strict';
const TableStore = require('tablestore');
const fs = require('fs');
const Long = TableStore.Long;
const c = new TableStore.Client({ accessKeyId: process.env.OTSKIT_AK, secretAccessKey: process.env.OTSKIT_SK,
  endpoint: process.env.OTSKIT_URL, instancename: process.env.OTSKIT_INSTANCE, maxRetries: 0 });
const call = (op, p) => new Promise((r) => c[op](p, (err, data) => r({ err, data })));
const cond = new TableStore.Condition(TableStore.RowExistenceExpectation.IGNORE, null);
const [mode, file] = process.argv.slice(2);
let passed = 0, failed = 0;
function check(name, ok, detail) { if (ok) passed++; else { failed++; console.log('FAIL ' + name + ': ' + JSON.stringify(detail)); } }

(async () => {
  if (mode === 'write') {
    const r = await call('createTable', { tableMeta: { tableName: 'dur', primaryKey: [{ name: 'id', type: 'INTEGER' }] },
      reservedThroughput: { capacityUnit: { read: 0, write: 0 } }, tableOptions: { timeToLive: -1, maxVersions: 1 } });
    check('createTable dur', !r.err, r.err && r.err.message);
    fs.writeFileSync(file, '');
    let next = 0, stop = false;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (!stop && next < 20000) {
        const id = next++;
        const pk = [{ id: Long.fromNumber(id) }];
        let w = await call('putRow', { tableName: 'dur', condition: cond, primaryKey: pk, attributeColumns: [{ v: Long.fromNumber(id) }] });
        if (!w.err) w = await call('updateRow', { tableName: 'dur', condition: cond, primaryKey: pk,
          updateOfAttributeColumns: [{ INCREMENT: [{ v: Long.fromNumber(2 * id) }] }] });
        if (w.err) { stop = true; break; }
        fs.appendFileSync(file, id + '\n');
      }
    }));
    const n = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
    console.log('durable: ' + n + ' rows acknowledged before the server went away');
    check('rows acknowledged', n > 0, n);
  } else {
    const ids = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number);
    let missing = 0, wrong = 0;
    for (let i = 0; i < ids.length; i += 100) {
      const chunk = ids.slice(i, i + 100);
      const r = await call('batchGetRow', { tables: [{ tableName: 'dur', primaryKey: chunk.map((id) => [{ id: Long.fromNumber(id) }]), maxVersions: 1 }] });
      if (r.err) { check('batchGetRow after restart', false, r.err.message); return finish(); }
      r.data.tables[0].forEach((row, k) => {
        if (!row.isOk || !row.primaryKey) { missing++; return; }
        const v = row.attributes.find((a) => a.columnName === 'v');
        if (!v || Number(v.columnValue.toString()) !== 3 * chunk[k]) wrong++;
      });
    }
    check('every acknowledged row is there after kill -9 (' + ids.length + ')', missing === 0, missing);
    check('with its acknowledged value', wrong === 0, wrong);
  }
  finish();
})();
function finish() { console.log(passed + ' passed, ' + failed + ' failed'); process.exit(failed === 0 ? 0 : 1); }
