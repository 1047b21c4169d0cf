/* host.c -- every binding of core.so under an allocator that fails the Nth
 * allocation, for every N until the call succeeds: a raise may come at any
 * allocation, and whatever a binding holds then must still be freed (by
 * the GC, at lua_close). Run under ASan (leaks and bad accesses) and
 * valgrind; never a crash, never a leak. Built for Lua 5.4 and for LuaJIT
 * (this host links the interpreter; core.so never does) and loads
 * $OTSKIT_BUILD/<abi>/otskit/core.so. Prints "N ok, M failed" (check.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "check.h"

#if LUA_VERSION_NUM >= 504
#define ABI "5.4"
#else
#define ABI "jit"
#endif

/* The allocator: counts growing allocations once armed and fails number
 * fail_at and every later one (Lua 5.4 retries a failed allocation after
 * a full collection, so failing one alone is mostly absorbed). Shrinking
 * and freeing never fail (both interpreters rely on it). */
typedef struct {
  long count, fail_at;
  int armed, failed;
} alloc_state;

static void *alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  alloc_state *a = (alloc_state *)ud;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (a->armed && (ptr == NULL || nsize > osize) && ++a->count >= a->fail_at) {
    a->failed = 1;
    return NULL;
  }
  return realloc(ptr, nsize);
}

/* One case: setup (run unarmed) returns a function; that function is then
 * called armed. Each binding of core.so appears in at least one case;
 * the Lua modules are used where they only pass arguments on. */
typedef struct { const char *name, *setup; } scase;

static const scase cases[] = {
  {"key.pack/unpack",
   "local key = require 'otskit.key'\n"
   "return function() local k = key.pack({ 1, 'a\\0b', 2.5, true, key.null, key.text('t') })\n"
   "  local t = key.unpack(k); local d = key.pack_desc({ 'x', -3 }); key.unpack_desc(d)\n"
   "  return #t end"},
  {"key.first/compare",
   "local C = require('otskit.core').key; local k = C.pack({ 'abc', 7 })\n"
   "return function() return C.first(k), C.compare('a', 'ab'), require('otskit.core').kv.cmp('b', 'a') end"},
  {"key.splice",
   "local key = require 'otskit.key'\n"
   "local sp = key.splice { sep = '#', { 'user', 'string' }, { 'n', 'int', width = 6 } }\n"
   "return function() return sp:encode { 'bob', 42 }, sp:encode_many { { 'a', 1 }, { 'b', 2 } } end"},
  {"key.hash_prefix/bucket",
   "local key = require 'otskit.key'; local hp = key.hash_prefix { algo = 'md5', len = 4 }\n"
   "local bh, bm = key.buckets { by = 'hash', n = 16 }, key.buckets { by = 'mod', n = 7 }\n"
   "return function() local many = hp:encode_many { 'a', 'b', 12 }\n"
   "  return hp:encode('k'), hp:decode(many[1]), tostring(hp), bh:of('k'), bm:of(-3), key.reverse_ts(5) end"},
  {"hash",
   "local C = require('otskit.core').hash\n"
   "return function() return C.digest('md5', 'abc'), C.hex_prefix('xxh3', 'abc', 6) end"},
  {"backoff",
   "local backoff = require 'otskit.backoff'\n"
   "return function() local s = backoff.new { base = 0.01, cap = 1, seed = 1, max_attempts = 4 }\n"
   "  local d = {} for i = 1, 5 do d[i] = s:next() end; s:reset()\n"
   "  local b = backoff.budget {}; b:acquire('retry'); b:success('retry'); b:available()\n"
   "  local r = backoff.budget { type = 'ratio' }; r:acquire('retry'); return #d, backoff.now() end"},
  {"frame pack/unpack/info",
   "local blob = require 'otskit.blob'; local v = ('abcdefgh'):rep(200)\n"
   "return function() local f = assert(blob.pack(v)); local z = assert(blob.pack(v, { codec = 'lz4' }))\n"
   "  local w = assert(blob.pack(v, { codec = 'zlib' }))\n"
   "  return blob.unpack(f), blob.unpack(z), blob.unpack(w), blob.info(f) end"},
  {"frame train/dictionary",
   "local blob = require 'otskit.blob'; local s = {}\n"
   "for i = 1, 300 do s[i] = ('{\"id\":%d,\"name\":\"user%d\",\"plan\":\"pro\"}'):format(i, i * 7) end\n"
   "return function() local d = blob.train(s, { size = 1024 })\n"
   "  if d then local f = blob.pack(s[1], { dict = d }); return blob.unpack(f, { dict = d }) end end"},
  {"chunk split/join/info",
   "local C = require('otskit.core').chunk; local v = ('0123456789'):rep(500)\n"
   "return function() local m, chunks = C.split(v, 1024, 'rows', nil)\n"
   "  local info = C.manifest_info(m); local d = C.chunk_data(m, chunks[2], 1)\n"
   "  return C.join(m, chunks, 1e6), info, d end"},
  {"chunk splitter/joiner",
   "local C = require('otskit.core').chunk; local v = ('abcdefghij'):rep(300)\n"
   "return function() local s = C.splitter(1024, 'columns', nil); local chunks, off = {}, 1\n"
   "  while off <= #v do local c; c, off = s:feed(v, off); chunks[#chunks + 1] = c end\n"
   "  local last, m = s:finish(); chunks[#chunks + 1] = last\n"
   "  local j = C.joiner(m, 1e6); for i = 1, #chunks do if chunks[i] then j:feed(chunks[i]) end end\n"
   "  return j:finish() end"},
  {"merge (byte keys, typed keys)",
   "local merge = require 'otskit.merge'\n"
   "return function() local m = merge.new { sources = 2, key = 'k' }\n"
   "  m:push(1, { { k = 'a' }, { k = 'c' } }, true); m:push(2, { { k = 'b' } }, true)\n"
   "  local out = m:pull(); m:close()\n"
   "  local t = merge.new { sources = 2, key = { 1 } }\n"
   "  t:push(1, { { primary_key = { { 'id', 1 } } } }, true); t:push(2, { { primary_key = { { 'id', 2 } } } }, true)\n"
   "  local o2 = t:pull(); return #out + #o2 end"},
  {"merge.read with resume cursor",
   "local merge = require 'otskit.merge'\n"
   "local data = { { { k = 'a' }, { k = 'd' } }, { { k = 'b' }, { k = 'c' } } }\n"
   "local function fetch(src) return data[src], nil end\n"
   "return function() local rows, cur = merge.read { sources = 2, fetch = fetch, key = 'k', limit = 2, parallel = false }\n"
   "  if cur then merge.read { sources = 2, fetch = fetch, key = 'k', cursor = cur, limit = 2, parallel = false } end\n"
   "  return rows end"},
  {"resume encode/decode",
   "local R = require('otskit.core').resume; local secret = ('s'):rep(16)\n"
   "return function() local t = R.encode(3, 2, false, true, true, { 5, 'x' }, secret)\n"
   "  return R.decode(t, secret), R.decode('junk') end"},
  {"kv",
   "local kv = require('otskit.core').kv\n"
   "return function() local db = kv.open(); db:create('t')\n"
   "  for i = 1, 20 do db:put('t', ('k%02d'):format(i), ('v'):rep(i)) end\n"
   "  db:put('t', 'k01', 'x', true); db:get('t', 'k05'); db:delete('t', 'k02'); db:count('t')\n"
   "  local c = db:scan('t', 'k03', nil, false, 10); c:next(); c:fetch(5); c:close()\n"
   "  db:begin(); db:put('t', 'z', 'z'); db:rollback(); db:has('t'); db:drop('t')\n"
   "  db:close(); return kv.bsearch({ 'a', 'c', 'e' }, 'd') end"},
  {"sqlq (SQL over a kv table, result sets)",
   "local core = require('otskit.core'); local Q, key = core.sqlq, require('otskit.key')\n"
   "local db = core.kv.open(); db:create('t_m'); local st = Q.attach(db)\n"
   "for i = 1, 30 do db:put('t_m', key.pack({ i }), core.row.encode({ 'v' }, { 'INTEGER' }, { i })) end\n"
   "assert(core.sql.exec(db, 'CREATE VIRTUAL TABLE temp.m USING otskit_map(k745f6d, t-1, k i 1, v i 0)'))\n"
   "return function() local r = Q.select(db, st, 'SELECT k, v, v * 0.5 FROM m WHERE k > 3 AND k <= 20 ORDER BY k DESC', {})\n"
   "  Q.select(db, st, 'SELECT nope FROM m', {}); Q.parse_create('CREATE TABLE x (a BIGINT, PRIMARY KEY (a))')\n"
   "  local b = Q.encode({ { 'k', 'LONG' }, { 's', 'STRING' }, { 'f', 'DOUBLE' }, { 'b', 'BOOLEAN' }, { 'x', 'BINARY' } },\n"
   "    { { 1, 'a', 0.5, true, '\\0' }, {} }, 2)\n"
   "  return r, Q.decode(b), Q.decode('junk') end"},
  {"dv (doc values: columns, filters, otskit_dv)",
   "local core = require('otskit.core'); local dv, sql = core.dv, core.sql\n"
   "local db = core.kv.open(); assert(sql.exec(db, 'CREATE TABLE d (id INTEGER PRIMARY KEY, a, b, k)'))\n"
   "for i = 1, 40 do sql.rows(db, 'INSERT INTO d VALUES (?1, ?2, ?3, ?4)', { i, i % 7, i / 4, 'k' .. i % 5 }) end\n"
   "return function() local s = dv.stamp(db)\n"
   "  local a = dv.column(db, 'SELECT id, a FROM d WHERE a IS NOT NULL', 'i64', 41)\n"
   "  local b = dv.column(db, 'SELECT id, b FROM d WHERE b IS NOT NULL', 'f64', 41)\n"
   "  local k = dv.column(db, 'SELECT id, k FROM d WHERE k IS NOT NULL ORDER BY k', 'ord', 41)\n"
   "  dv.column(db, 'SELECT id, k FROM d WHERE k IS NOT NULL', 'i64', 41)\n"
   "  local f = dv.filter({ { a, 'range', false, 1, true, 5, false }, { b, 'in', true, { 1.5, 2, 0 / 0 } },\n"
   "    { k, 'range', false, 'k1', true, 'k3', true }, { k, 'in', false, { 'k1', 'k4', 'zz' } }, { a, 'exists', true } })\n"
   "  local r = sql.rows(db, 'SELECT count(*) FROM d WHERE otskit_dv(?1, id)', { f })\n"
   "  a:free(); sql.rows(db, 'SELECT count(*) FROM d WHERE otskit_dv(?1, id)', { f })\n"
   "  return s, r, b:bytes(), k:bytes() end"},
  {"row encode/decode",
   "local R = require('otskit.core').row\n"
   "return function() local b = R.encode({ 'a', 'b', 'c', 'd', 'e' }, { 'STRING', 'INTEGER', 'DOUBLE', 'BOOLEAN', 'BINARY' },\n"
   "    { 'x', 7, 1.5, true, '\\0\\1' })\n"
   "  return R.decode(b, nil, true), R.decode(b, { a = true }) end"},
  {"wire lazy rows (row.cells built when first read)",
   "local wire = require 'otskit.wire'\n"
   "local b = assert(require('otskit.wire.plainbuffer').encode_rows({\n"
   "  { primary_key = { { 'id', 1 } }, cells = { { 'v', ('x'):rep(50), 5 }, { 'n', 7, 6 }, { 'b', wire.binary('z'), 7 } } },\n"
   "  { primary_key = { { 'id', 2 } }, cells = { { 'v', 'abc', 8 }, { 'v', 'old', 3 } } } }))\n"
   "return function() local rows = wire.decode_rows(b)\n"
   "  return rows, rows[2].cells, rows[1].cells, rows[1].columns end"},
  {"wire GetRange answer (rows read in the body, their order)",
   "local wire = require 'otskit.wire'\n"
   "local body = assert(wire.encode_response('GetRange', { consumed = { capacity_unit = { read = 1, write = 0 } },\n"
   "  rows = { { primary_key = { { 'id', 1 } }, cells = { { 'v', 'abc', 5 } } },\n"
   "           { primary_key = { { 'id', 2 } }, cells = { { 'v', ('x'):rep(40), 6 } } } },\n"
   "  next_start_primary_key = { { 'id', 3 } } }))\n"
   "return function() local res = wire.decode_response('GetRange', body)\n"
   "  return res, res and wire.rows_order(res.rows), res and res.rows[2].cells end"},
  {"wire (PlainBuffer, protobuf, signatures)",
   "local wire = require 'otskit.wire'\n"
   "local req = { table = 't', primary_key = { { 'id', 1 }, { 's', 'x' } } }\n"
   "return function() local b = wire.encode_put({ { 'id', 1 } }, { { 'v', 'abc' }, { 'n', 7 } })\n"
   "  local rows = wire.decode_rows(b); local body = wire.encode_request('GetRow', req)\n"
   "  local back = wire.decode_request('GetRow', body)\n"
   "  return rows, back, wire.sign_request('secret', 'GetRow', { ['x-ots-date'] = 'd' }),\n"
   "    wire.content_md5(body), wire.decode_error(wire.encode_error('OTSParameterInvalid', 'bad')) end"},
};

/* A state with the allocator, the libraries and core.so loaded, and the
 * case's function on the stack; NULL if the setup fails (a test bug). */
static lua_State *prepare(alloc_state *a, const scase *c, const char *build) {
  char path[512];
  lua_State *L = lua_newstate(alloc, a);
  if (L == NULL) return NULL;
  luaL_openlibs(L);
  snprintf(path, sizeof path,
           "package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path\n"
           "package.cpath = '%s/%s/?.so;' .. package.cpath",
           build, ABI);
  if (luaL_dostring(L, path) != 0 || luaL_loadstring(L, c->setup) != 0 ||
      lua_pcall(L, 0, 1, 0) != 0 || !lua_isfunction(L, -1)) {
    fprintf(stderr, "%s: setup failed: %s\n", c->name, lua_tostring(L, -1));
    lua_close(L);
    return NULL;
  }
  return L;
}

/* After a raise out of a wire case: decodes take their scratch row from
 * the module's context again (lwire.c, take_scratch: slot 8,
 * CTX_SCRATCH), one reused from decode to decode, none left in use.
 * 1 when so. */
static const char scratch_check[] =
  "local C = require('otskit.core').wire\n"
  "local _, ctx = debug.getupvalue(C.decode_rows, 1)\n"
  "local b = C.encode_put({ { 'id', 1 } }, { { 'v', 'abc' } })\n"
  "assert(C.decode_rows(b)); local s1 = ctx[8]\n"
  "assert(C.decode_rows(b)); local s2 = ctx[8]\n"
  "return type(s1) == 'userdata' and s1 == s2\n";

static int scratch_reused(lua_State *L) {
  int ok = luaL_dostring(L, scratch_check) == 0 && lua_toboolean(L, -1);
  if (!ok) fprintf(stderr, "after a raise: %s\n", lua_isstring(L, -1) ? lua_tostring(L, -1) : "a new scratch row");
  return ok;
}

int main(void) {
  const char *build = getenv("OTSKIT_BUILD") ? getenv("OTSKIT_BUILD") : "build";
  size_t i;
  /* the C API bindings, also on LuaJIT (its FFI paths are not bindings) */
  setenv("OTSKIT_NO_FFI", "1", 1);
  setvbuf(stdout, NULL, _IONBF, 0);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const scase *c = &cases[i];
    long n, failures = 0;
    int done = 0;
    for (n = 1; n <= 200000 && !done; n++) {
      alloc_state a = {0, 0, 0, 0};
      lua_State *L = prepare(&a, c, build);
      int rc;
      if (L == NULL) break;
      a.fail_at = n;
      a.armed = 1;
      rc = lua_pcall(L, 0, LUA_MULTRET, 0);
      a.armed = 0;
      if (rc == 0 && !a.failed) done = 1;      /* no allocation failed: all paths ran */
      else if (rc == 0) failures++;            /* failures handled without a raise */
      else if (!a.failed) {                    /* raised with memory to spare: a real error */
        fprintf(stderr, "%s: raised without an allocation failure: %s\n", c->name,
                lua_tostring(L, -1));
        lua_close(L);
        break;
      } else if (strncmp(c->name, "wire", 4) == 0) {
        CHECK(scratch_reused(L));
      }
      lua_close(L);
    }
    CHECK(done);
    fflush(stdout);
    printf("# %s: failed from allocation N on, N = 1..%ld (%ld without a raise), then ran\n",
           c->name, n - 2, failures);
  }
  return check_done();
}
