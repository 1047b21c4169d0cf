/* lkv.c -- Lua binding of kv.c: otskit.core.kv. A db and its cursors are
 * userdata; a cursor keeps its db alive (uservalue) and is closed with it. */
#include <string.h>

#include "bytes.h"
#include "compat.h"
#include "kv.h"
#include "laux.h"
#include "lkey.h"
#include "lkv.h"
#include "parts.h"

#define DB_MT "otskit.kv.db"
#define CUR_MT "otskit.kv.cursor"

typedef struct { kv_db *db; } ldb;
typedef struct { kv_cursor c; } lcur;

static kv_db *checkdb(lua_State *L) {
  ldb *u = (ldb *)luaL_checkudata(L, 1, DB_MT);
  if (u->db == NULL) otsk_error(L, "kv", "db is closed");
  return u->db;
}

kv_db *otsk_kv_checkdb(lua_State *L) { return checkdb(L); }

/* nil, msg, code with the failure's class as the code: "KVBusy" (lock
 * contention outlasted the busy timeout: nothing was done), "KVCorrupt"
 * (the file or a row is damaged), "KVFull" (disk full), "KVNoTable",
 * "KVError" (anything else) */
static int fail_sql(lua_State *L, kv_db *db) {
  static const char *const codes[] = {"KVError", "KVBusy", "KVCorrupt", "KVFull", "KVNoTable"};
  int c = kv_errclass(db);
  return otsk_fail(L, codes[c >= 0 && c <= 4 ? c : 0], "sqlite: %s", kv_errmsg(db));
}

/* the table named by argument 2, or NULL after pushing nil, msg, code
 * ("KVNoTable" if it does not exist: another connection may drop it) */
static kv_table *checktable(lua_State *L, kv_db *db) {
  const char *name = luaL_checkstring(L, 2);
  int found;
  kv_table *t = kv_table_get(db, name, 0, &found);
  if (t == NULL) {
    if (!found) otsk_fail(L, "KVNoTable", "no table '%s'", name);
    else fail_sql(L, db);
  }
  return t;
}

kv_table *otsk_kv_checktable(lua_State *L, kv_db *db) { return checktable(L, db); }
int otsk_kv_fail(lua_State *L, kv_db *db) { return fail_sql(L, db); }

/* kv.open([path [, busy_ms]]) -> db | nil, msg, code (see fail_sql).
 * path: a file name or ":memory:" (the default when nil). A path that is
 * not a string raises (a number is never turned into a file name); one
 * with a NUL byte, empty, or an SQLite URI ("file:...") is refused with
 * code "KVBadPath" (see kv_open). */
static int l_open(lua_State *L) {
  size_t len = 8;
  const char *path = ":memory:";
  int64_t busy;
  char err[256];
  ldb *u;
  int rc;
  if (!lua_isnoneornil(L, 1)) {
    if (lua_type(L, 1) != LUA_TSTRING)
      return otsk_error(L, "kv", "open: path must be a string, got %s", luaL_typename(L, 1));
    path = lua_tolstring(L, 1, &len);
  }
  busy = lua_isnoneornil(L, 2) ? KV_BUSY_MS : otsk_checkint64(L, 2, "kv", "#2 (busy_ms)");
  if (busy < 0 || busy > 86400000) return otsk_error(L, "kv", "busy_ms must be 0..86400000");
  u = (ldb *)lua_newuserdatauv(L, sizeof *u, 0);
  u->db = NULL;
  luaL_getmetatable(L, DB_MT);
  lua_setmetatable(L, -2);
  rc = kv_open(path, len, (int)busy, &u->db, err, sizeof err);
  if (rc == KV_BADPATH) return otsk_fail(L, "KVBadPath", "cannot open '%s': %s", path, err);
  if (rc != KV_OK) {
    const char *code = strstr(err, "locked") || strstr(err, "busy") ? "KVBusy"
                     : strstr(err, "not a database") || strstr(err, "malformed") ? "KVCorrupt" : "KVError";
    return otsk_fail(L, code, "cannot open '%s': %s", path, err);
  }
  return 1;
}

/* db:integrity() -> true | nil, msg, code: SQLite's integrity check */
static int l_integrity(lua_State *L) {
  kv_db *db = checkdb(L);
  if (kv_integrity(db) != KV_OK) return fail_sql(L, db);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:max_pages(n) -> the page cap in force: writes past it fail as on a
 * full disk ("KVFull") */
static int l_max_pages(lua_State *L) {
  kv_db *db = checkdb(L);
  int64_t n = otsk_checkint64(L, 2, "kv", "#2 (pages)"), r;
  if (n < 1) return otsk_error(L, "kv", "pages must be >= 1");
  r = kv_max_pages(db, n);
  if (r < 0) return fail_sql(L, db);
  otsk_pushint64(L, r);
  return 1;
}

/* db:schema() -> the schema cookie (changes with any CREATE/DROP) */
static int l_schema(lua_State *L) {
  kv_db *db = checkdb(L);
  int64_t v = kv_schema_version(db);
  if (v < 0) return fail_sql(L, db);
  otsk_pushint64(L, v);
  return 1;
}

/* db:close() -> true; idempotent (also __gc / __close) */
static int l_close(lua_State *L) {
  ldb *u = (ldb *)luaL_checkudata(L, 1, DB_MT);
  if (u->db) {
    kv_close_db(u->db);
    u->db = NULL;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* db:create(name) -> true: creates the table if missing */
static int l_create(lua_State *L) {
  kv_db *db = checkdb(L);
  int found;
  if (kv_table_get(db, luaL_checkstring(L, 2), 1, &found) == NULL) return fail_sql(L, db);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:has(name) -> whether the table exists */
static int l_has(lua_State *L) {
  kv_db *db = checkdb(L);
  int found;
  kv_table *t = kv_table_get(db, luaL_checkstring(L, 2), 0, &found);
  if (t == NULL && found) return fail_sql(L, db);
  lua_pushboolean(L, t != NULL);
  return 1;
}

/* db:drop(name) -> true; closes cursors over it */
static int l_drop(lua_State *L) {
  kv_db *db = checkdb(L);
  if (kv_table_drop(db, luaL_checkstring(L, 2)) != KV_OK) return fail_sql(L, db);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:get(t, key) -> value | nil when missing | nil, msg, "KVError" */
static int l_get(lua_State *L) {
  kv_db *db = checkdb(L);
  kv_table *t = checktable(L, db);
  if (t == NULL) return 3;
  size_t kl, vl;
  const char *k = luaL_checklstring(L, 3, &kl);
  const void *v;
  int rc = kv_get(t, k, kl, &v, &vl);
  if (rc == KV_OK) {
    lua_pushlstring(L, (const char *)v, vl); /* may raise on OOM: the next get resets */
    kv_get_done(t);
  } else if (rc == KV_NOTFOUND) {
    lua_pushnil(L);
  } else {
    return fail_sql(L, db);
  }
  return 1;
}

/* db:put(t, key, value [, swap]) -> true; with swap: the byte length of
 * the value it replaced, or false if the key was new */
static int l_put(lua_State *L) {
  kv_db *db = checkdb(L);
  kv_table *t = checktable(L, db);
  if (t == NULL) return 3;
  size_t kl, vl;
  const char *k = luaL_checklstring(L, 3, &kl);
  const char *v = luaL_checklstring(L, 4, &vl);
  int64_t old = -1;
  if (lua_toboolean(L, 5)) {
    if (kv_swap(t, k, kl, v, vl, &old) != KV_OK) return fail_sql(L, db);
    if (old < 0) lua_pushboolean(L, 0);
    else otsk_pushint64(L, old);
    return 1;
  }
  if (kv_put(t, k, kl, v, vl) != KV_OK) return fail_sql(L, db);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:delete(t, key) -> true if a row was deleted, false if none */
static int l_delete(lua_State *L) {
  kv_db *db = checkdb(L);
  kv_table *t = checktable(L, db);
  if (t == NULL) return 3;
  size_t kl;
  const char *k = luaL_checklstring(L, 3, &kl);
  int rc = kv_del(t, k, kl);
  if (rc == KV_ERR) return fail_sql(L, db);
  lua_pushboolean(L, rc == KV_OK);
  return 1;
}

/* db:count(t) -> rows in t */
static int l_count(lua_State *L) {
  kv_db *db = checkdb(L);
  kv_table *t = checktable(L, db);
  int64_t n;
  if (t == NULL) return 3;
  n = kv_count(t);
  if (n < 0) return fail_sql(L, db);
  otsk_pushint64(L, n);
  return 1;
}

static void set_dbref(lua_State *L, int cur, int dbidx) {
#if OTSKIT_LUA51
  lua_createtable(L, 1, 0);
  lua_pushvalue(L, dbidx);
  lua_rawseti(L, -2, 1);
  lua_setfenv(L, cur);
#else
  lua_pushvalue(L, dbidx);
  lua_setiuservalue(L, cur, 1);
#endif
}

/* db:scan(t, lo, hi, reverse, limit) -> cursor over keys in [lo, hi)
 * (lo nil: from the first key; hi nil: to the last), ascending or
 * descending, at most limit rows (nil: all). */
static int l_scan(lua_State *L) {
  kv_db *db = checkdb(L);
  kv_table *t = checktable(L, db);
  if (t == NULL) return 3;
  size_t lol = 0, hil = 0;
  const char *lo = luaL_optlstring(L, 3, NULL, &lol);
  const char *hi = luaL_optlstring(L, 4, NULL, &hil);
  int reverse = lua_toboolean(L, 5);
  int64_t limit = lua_isnoneornil(L, 6) ? -1 : otsk_checkint64(L, 6, "kv", "#6 (limit)");
  lcur *u;
  if (limit < -1) return otsk_error(L, "kv", "limit must be >= 0");
  u = (lcur *)lua_newuserdatauv(L, sizeof *u, 1);
  memset(u, 0, sizeof *u);
  luaL_getmetatable(L, CUR_MT);
  lua_setmetatable(L, -2);
  set_dbref(L, lua_gettop(L), 1);
  if (kv_scan(t, &u->c, lo, lol, hi, hil, reverse, limit) != KV_OK) return fail_sql(L, db);
  return 1;
}

/* One cursor userdata per Lua state, reused (lkv.h) */
#define SCRATCH_CUR "otskit.kv.scratch_cursor"
kv_cursor *otsk_kv_scratchcursor(lua_State *L) {
  lcur *u;
  lua_getfield(L, LUA_REGISTRYINDEX, SCRATCH_CUR);
  u = (lcur *)lua_touserdata(L, -1);
  if (u == NULL) {
    lua_pop(L, 1);
    u = (lcur *)lua_newuserdatauv(L, sizeof *u, 1);
    memset(u, 0, sizeof *u);
    luaL_getmetatable(L, CUR_MT);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, SCRATCH_CUR);
  } else {
    kv_cursor_close(&u->c); /* left open by an error raised past its last use */
    memset(u, 0, sizeof *u);
  }
  set_dbref(L, lua_gettop(L), 1);
  return &u->c;
}

void otsk_kv_scratchcursor_done(lua_State *L, int idx) {
  lcur *u = (lcur *)lua_touserdata(L, idx);
  kv_cursor_close(&u->c);
#if OTSKIT_LUA51
  lua_newtable(L);
  lua_setfenv(L, idx);
#else
  lua_pushnil(L);
  lua_setiuservalue(L, idx, 1);
#endif
}

kv_cursor *otsk_kv_pushcursor(lua_State *L) {
  lcur *u = (lcur *)lua_newuserdatauv(L, sizeof *u, 1);
  memset(u, 0, sizeof *u);
  luaL_getmetatable(L, CUR_MT);
  lua_setmetatable(L, -2);
  set_dbref(L, lua_gettop(L), 1);
  return &u->c;
}

/* cursor:next() -> key, value | nil at the end */
static int l_cur_next(lua_State *L) {
  lcur *u = (lcur *)luaL_checkudata(L, 1, CUR_MT);
  const void *k, *v;
  size_t kl, vl;
  kv_db *db = u->c.db;
  int rc = kv_next(&u->c, &k, &kl, &v, &vl);
  if (rc == KV_ROW) {
    lua_pushlstring(L, (const char *)k, kl);
    lua_pushlstring(L, (const char *)v, vl);
    return 2;
  }
  if (rc == KV_DONE) { lua_pushnil(L); return 1; }
  return fail_sql(L, db);
}

/* cursor:fetch(n [, maxbytes]) -> keys, values, count: the next rows, at
 * most n, stopping after the row that brings key+value bytes to maxbytes
 * (at least one row while any remain). count 0 at the end. */
static int l_cur_fetch(lua_State *L) {
  lcur *u = (lcur *)luaL_checkudata(L, 1, CUR_MT);
  int64_t n = otsk_checkint64(L, 2, "kv", "#2 (n)");
  int64_t maxb = lua_isnoneornil(L, 3) ? INT64_MAX : otsk_checkint64(L, 3, "kv", "#3 (maxbytes)");
  int64_t i = 0, bytes = 0;
  kv_db *db = u->c.db;
  if (n < 1 || n > 1000000) return otsk_error(L, "kv", "n must be 1..1000000");
  lua_createtable(L, (int)(n < 64 ? n : 64), 0);
  lua_createtable(L, (int)(n < 64 ? n : 64), 0);
  while (i < n && bytes < maxb) {
    const void *k, *v;
    size_t kl, vl;
    int rc = kv_next(&u->c, &k, &kl, &v, &vl);
    if (rc == KV_DONE) break;
    if (rc != KV_ROW) return fail_sql(L, db);
    i++;
    lua_pushlstring(L, (const char *)k, kl);
    lua_rawseti(L, -3, (int)i);
    lua_pushlstring(L, (const char *)v, vl);
    lua_rawseti(L, -2, (int)i);
    bytes += (int64_t)(kl + vl);
  }
  lua_pushinteger(L, (lua_Integer)i);
  return 3;
}

/* cursor:close(); idempotent (also __gc / __close) */
static int l_cur_close(lua_State *L) {
  lcur *u = (lcur *)luaL_checkudata(L, 1, CUR_MT);
  kv_cursor_close(&u->c);
  return 0;
}

static int txn(lua_State *L, int (*f)(kv_db *)) {
  kv_db *db = checkdb(L);
  if (f(db) != KV_OK) return fail_sql(L, db);
  lua_pushboolean(L, 1);
  return 1;
}
static int begin_write(kv_db *db) { return kv_begin(db, 1); }
static int begin_read(kv_db *db) { return kv_begin(db, 0); }
/* db:begin([read_only]) -> true | nil, msg, code */
static int l_begin(lua_State *L) { return txn(L, lua_toboolean(L, 2) ? begin_read : begin_write); }
static int l_commit(lua_State *L) { return txn(L, kv_commit); }
static int l_rollback(lua_State *L) { return txn(L, kv_rollback); }
static int l_in_txn(lua_State *L) {
  lua_pushboolean(L, kv_in_txn(checkdb(L)));
  return 1;
}

/* kv.bsearch(sorted, key) -> the number of entries of the sorted array of
 * strings that are <= key (0..#sorted): the partition index lookup. */
static int l_bsearch(lua_State *L) {
  size_t kl;
  const char *k;
  int lo = 0, hi;
  luaL_checktype(L, 1, LUA_TTABLE);
  k = luaL_checklstring(L, 2, &kl);
  hi = (int)lua_rawlen(L, 1);
  while (lo < hi) { /* invariant: entries 1..lo are <= key, hi+1.. are > key */
    int mid = lo + (hi - lo + 1) / 2;
    size_t ml;
    const char *m;
    lua_rawgeti(L, 1, mid);
    m = lua_tolstring(L, -1, &ml);
    if (m == NULL) return otsk_error(L, "kv", "bsearch: entry %d is not a string", mid);
    if (bytes_cmp(m, ml, k, kl) <= 0) lo = mid;
    else hi = mid - 1;
    lua_pop(L, 1);
  }
  lua_pushinteger(L, lo);
  return 1;
}


static const luaL_Reg db_methods[] = {
  {"close", l_close}, {"create", l_create}, {"has", l_has}, {"drop", l_drop},
  {"get", l_get}, {"put", l_put}, {"delete", l_delete}, {"count", l_count},
  {"scan", l_scan}, {"begin", l_begin}, {"commit", l_commit},
  {"rollback", l_rollback}, {"in_txn", l_in_txn}, {"integrity", l_integrity},
  {"schema", l_schema}, {"max_pages", l_max_pages},
  {"get_pb", otsk_kv_get_pb}, {"range_pb", otsk_kv_range_pb}, {"get_row_answer", otsk_kv_get_row_answer},
  {NULL, NULL}
};
static const luaL_Reg db_meta[] = {
  OTSK_CLOSE_META(l_close), {NULL, NULL}
};
static const luaL_Reg cur_methods[] = {
  {"next", l_cur_next}, {"fetch", l_cur_fetch}, {"close", l_cur_close}, {NULL, NULL}
};
static const luaL_Reg cur_meta[] = {
  OTSK_CLOSE_META(l_cur_close), {NULL, NULL}
};
static const luaL_Reg funcs[] = {
  {"open", l_open}, {"cmp", otsk_key_compare} /* alias of key.compare */, {"bsearch", l_bsearch},
  {"get_plan", otsk_kv_get_plan}, {NULL, NULL}
};

int otsk_open_kv(lua_State *L) {
  otsk_newclass(L, DB_MT, db_methods, db_meta);
  otsk_newclass(L, CUR_MT, cur_methods, cur_meta);
  otsk_kv_getrow_register(L);
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  return 1;
}
