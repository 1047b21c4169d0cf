/* lsql.c -- Lua binding of kvsql.c: otskit.core.sql. SQL on a kv db's own
 * connection (the first argument is an otskit.core.kv db), inside its
 * transactions:
 *   sql.exec(db, text) -> true | nil, msg, code
 *   sql.rows(db, text [, binds [, nbinds [, max [, skip [, count]]]]])
 *       -> rows, n [, total] | nil, msg, code
 *     binds: a list of parameter values (?1, ?2, ...): integers bind as
 *     INTEGER, other numbers as REAL, strings as TEXT (CAST(? AS BLOB) in
 *     the text for a BLOB), booleans as 0/1, sql.NULL as NULL; nbinds
 *     (default #binds) lets a list end in NULLs. rows: a list of rows, each
 *     a list of the result columns (NULL -> nil, INTEGER -> an integer as
 *     otskit pushes int64s, REAL -> number, TEXT/BLOB -> string). skip:
 *     result rows stepped over first; max: at most this many rows kept
 *     (then the statement stops). Use them instead of LIMIT / OFFSET in the
 *     text: SQLite 3.40 with LIMIT on an ORDER BY over a subquery-driven
 *     join was measured 6x slower than the same statement stopped here.
 *     count (true): the statement runs to its end after the rows kept and
 *     total is the number of rows it produced (skipped ones included):
 *     a page and the count of every match in one pass.
 *   sql.build(db, table, plan) -> documents, next doc id, next point id
 *       | nil, msg, code: a search index's build in C over the rows of kv
 *       table `table` (sbuild.h; plan: see l_build below).
 *   sql.keys(db, text, binds, nbinds, max, skip, count, types [, mark [, names]])
 *       -> vals, n, total, markkey | nil, msg, code
 *     sql.rows for a statement whose first result column is a row key (a
 *     packed tuple, otskit.key) of #types elements, types one letter per
 *     key column: "i" an INTEGER (an integer element), "s" or "b" a
 *     STRING or BINARY (a byte-string element). vals: the keys' elements
 *     decoded, flat (row r's element j at (r-1)*#types+j; INTEGER as
 *     otskit pushes int64s, the others strings): one table for the page,
 *     none per row. total: the rows the statement produced (with count
 *     every row; else those skipped and kept before it stopped); markkey: the
 *     raw first column of kept row mark (nil without one). A key that is
 *     not such a tuple fails with code "KVCorrupt". names (the key
 *     columns' names, one a letter of types): vals[r] is row r as a search
 *     returns it, { primary_key = { {name, v} ... }, columns = {} } (a
 *     cell {name, v, "INTEGER"|"BINARY"} when v is a string of such a
 *     column, as otskit.values.key_cell gives it); its columns table is
 *     made when first read (the rows' metatable: row.columns is an empty
 *     table, the same one each time; pairs(row) shows it once read).
 *   sql.deadline(db, ms) -> true: a time limit ms (>= 0) milliseconds from
 *     now on db's statements: one running past it is interrupted (fails
 *     "KVError", "sqlite: interrupted"); sql.deadline(db) lifts it ->
 *     "interrupted" (it stopped a statement), "passed" (none, but the time
 *     is up) or false (kvsql.h's kvsql_deadline).
 *   sql.top_keys(db, text, binds, nbinds, max, types, names) -> rows, n
 *       | nil, msg, code
 *     for text's rows (key, v) in the order v DESC, key DESC: the first
 *     max of them in the order v DESC, key ASC (as ORDER BY v DESC, key
 *     LIMIT max, without SQLite's temporary B-tree), each row as sql.keys
 *     builds it with names (see l_top_keys).
 *   sql.NULL: the NULL parameter.
 * Failure codes are the kv ones: "KVBusy", "KVCorrupt", "KVFull",
 * "KVError". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "docval.h"
#include "kvsql.h"
#include "laux.h"
#include "lkv.h"
#include "parts.h"
#include "row.h"
#include "sbuild.h"
#include "tuple.h"

static kv_db *checkdb(lua_State *L) {
  kv_db **u = (kv_db **)luaL_checkudata(L, 1, "otskit.kv.db");
  if (*u == NULL) otsk_error(L, "sql", "db is closed");
  return *u;
}

static int fail(lua_State *L, kv_db *db, int rc) {
  int c = rc & 0xff;
  const char *code = c == SQLITE_BUSY || c == SQLITE_LOCKED ? "KVBusy"
                   : c == SQLITE_CORRUPT || c == SQLITE_NOTADB ? "KVCorrupt"
                   : c == SQLITE_FULL ? "KVFull" : "KVError";
  return otsk_fail(L, code, "sqlite: %s", kvsql_errmsg(db));
}

static int l_exec(lua_State *L) {
  kv_db *db = checkdb(L);
  const char *text = luaL_checkstring(L, 2);
  int rc = kvsql_exec(db, text);
  if (rc != SQLITE_OK) return fail(L, db, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static void push_col(lua_State *L, sqlite3_stmt *st, int i) {
  switch (sqlite3_column_type(st, i)) {
  case SQLITE_INTEGER: otsk_pushint64(L, (int64_t)sqlite3_column_int64(st, i)); break;
  case SQLITE_FLOAT: lua_pushnumber(L, sqlite3_column_double(st, i)); break;
  case SQLITE_NULL: lua_pushnil(L); break;
  default: {
    const void *p = sqlite3_column_blob(st, i);
    lua_pushlstring(L, p ? (const char *)p : "", (size_t)sqlite3_column_bytes(st, i));
  }
  }
}

/* Prepares text (argument 2) and binds argument 3's values (nbinds at
 * argument 4); the statement, or NULL with the failure pushed (*ret: the
 * count of values it returns). */
const dv_filter *otsk_dv_testfilter(lua_State *L, int idx); /* ldv.c */

/* (*ptr: set when a doc values filter was bound, as a pointer: the
 * caller clears the statement's bindings after its run, so no statement
 * in the cache keeps it) */
static sqlite3_stmt *prepare_bound(lua_State *L, kv_db *db, int *ret, int *ptr) {
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  sqlite3_stmt *st;
  int nb, i;
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  nb = lua_isnoneornil(L, 3) ? 0 : (lua_isnoneornil(L, 4) ? (int)lua_rawlen(L, 3) : (int)luaL_checkinteger(L, 4));
  st = kvsql_prepare(db, text, len);
  if (st == NULL) {
    *ret = fail(L, db, sqlite3_errcode((sqlite3 *)kv_sqlite(db)));
    return NULL;
  }
  if (nb > sqlite3_bind_parameter_count(st)) {
    sqlite3_reset(st);
    *ret = otsk_error(L, "sql", "%d values for %d parameters", nb, sqlite3_bind_parameter_count(st));
    return NULL;
  }
  for (i = 1; i <= nb; i++) {
    lua_rawgeti(L, 3, i);
    switch (lua_type(L, -1)) {
    case LUA_TNUMBER: {
      lua_Number d = lua_tonumber(L, -1);
#if LUA_VERSION_NUM >= 503
      if (lua_isinteger(L, -1)) sqlite3_bind_int64(st, i, (sqlite3_int64)lua_tointeger(L, -1));
      else sqlite3_bind_double(st, i, d);
#else
      if (d == floor(d) && d >= -9.2e18 && d <= 9.2e18) sqlite3_bind_int64(st, i, (sqlite3_int64)d);
      else sqlite3_bind_double(st, i, d);
#endif
      break;
    }
    case LUA_TSTRING: {
      size_t sl;
      const char *s = lua_tolstring(L, -1, &sl);
      sqlite3_bind_text(st, i, s, (int)sl, SQLITE_TRANSIENT);
      break;
    }
    case LUA_TBOOLEAN: sqlite3_bind_int(st, i, lua_toboolean(L, -1)); break;
    case LUA_TLIGHTUSERDATA: case LUA_TNIL: sqlite3_bind_null(st, i); break;
    case LUA_TUSERDATA: {
      const dv_filter *f = otsk_dv_testfilter(L, -1);
      if (f != NULL) {
        sqlite3_bind_pointer(st, i, (void *)f, DV_PTR_TYPE, NULL);
        *ptr = 1;
        break;
      }
    }
    /* fall through */
    default:
      sqlite3_reset(st);
      sqlite3_clear_bindings(st);
      *ret = otsk_error(L, "sql", "parameter %d: cannot bind a %s", i, luaL_typename(L, -1));
      return NULL;
    }
    lua_pop(L, 1);
  }
  return st;
}

static int l_deadline(lua_State *L) {
  kv_db *db = checkdb(L);
  int64_t ms;
  if (lua_isnoneornil(L, 2)) {
    int r = kvsql_deadline_end(db);
    if (r == 0) lua_pushboolean(L, 0);
    else lua_pushstring(L, r == KVSQL_INTERRUPTED ? "interrupted" : "passed");
    return 1;
  }
  ms = otsk_checkint64(L, 2, "sql", "deadline: ms");
  if (ms < 0) otsk_error(L, "sql", "deadline: ms must be >= 0");
  if (kvsql_deadline(db, ms) != SQLITE_OK) otsk_error(L, "sql", "deadline: out of memory");
  lua_pushboolean(L, 1);
  return 1;
}

static int l_rows(lua_State *L) {
  kv_db *db = checkdb(L);
  sqlite3_stmt *st;
  int i, rc = SQLITE_DONE, ncol, n = 0, ret = 0, ptr = 0;
  lua_Integer maxrows = luaL_optinteger(L, 5, -1), skip = luaL_optinteger(L, 6, 0), total = 0;
  int count = lua_toboolean(L, 7);
  st = prepare_bound(L, db, &ret, &ptr);
  if (st == NULL) return ret;
  ncol = sqlite3_column_count(st);
  lua_newtable(L);
  while ((count || maxrows < 0 || n < maxrows) && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    total++;
    if (skip > 0) { skip--; continue; }
    if (maxrows >= 0 && n >= maxrows) continue; /* counting only */
    lua_createtable(L, ncol, 0);
    for (i = 0; i < ncol; i++) {
      push_col(L, st, i);
      lua_rawseti(L, -2, i + 1);
    }
    lua_rawseti(L, -2, ++n);
  }
  if (!count && maxrows >= 0 && n >= maxrows) rc = SQLITE_DONE;
  sqlite3_reset(st);
  if (ptr) sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return fail(L, db, rc);
  lua_pushinteger(L, n);
  if (!count) return 2;
  lua_pushinteger(L, total);
  return 3;
}

/* the integer field k of the table at idx (def when absent) */
static int64_t opt_field(lua_State *L, int idx, const char *k, int64_t def) {
  int64_t v = def;
  lua_getfield(L, idx, k);
  if (!lua_isnil(L, -1)) v = otsk_checkint64(L, -1, "sql", k);
  lua_pop(L, 1);
  return v;
}

static const char *str_field(lua_State *L, int idx, const char *k, size_t *len) {
  const char *s;
  lua_getfield(L, idx, k);
  if (lua_type(L, -1) != LUA_TSTRING) otsk_error(L, "sql", "build: %s must be a string", k);
  s = lua_tolstring(L, -1, len);
  lua_pop(L, 1); /* still referenced by the plan */
  return s;
}

static int cmp_field(const void *a, const void *b) {
  const sb_field *x = (const sb_field *)a, *y = (const sb_field *)b;
  return row_name_cmp(x->name, x->name_len, y->name, y->name_len);
}

/* sql.build(db, table, plan) -> documents, next doc id, next point id |
 * nil, msg, code: sbuild.h's build over the rows of kv table `table`.
 * plan = { fields = { {name, id, kind (LONG DOUBLE BOOLEAN KEYWORD TEXT
 * GEO_POINT), col, fts, lower, delimit}, ... }, nfts, lo, maxv, doc_id,
 * gpt_id, doc, has, gpt, geo, fts (the statements' text, sbuild.h) }.
 * Codes: the kv ones (a stored row that is not one: KVCorrupt). */
static int l_build(lua_State *L) {
  static const char *const kinds[] = {"LONG", "DOUBLE", "BOOLEAN", "KEYWORD", "TEXT", "GEO_POINT", NULL};
  kv_db *db = checkdb(L);
  kv_table *t = otsk_kv_checktable(L, db);
  sqlite3 *sq = (sqlite3 *)kv_sqlite(db);
  sb_plan p;
  const char *text[5];
  sqlite3_stmt **st[5];
  char err[256];
  int i, n, rc = SQLITE_OK, corrupt = 0;
  if (t == NULL) return 3;
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 3);
  memset(&p, 0, sizeof p);
  p.kv_class = -1;
  lua_getfield(L, 3, "fields");
  luaL_checktype(L, -1, LUA_TTABLE);
  n = (int)lua_rawlen(L, -1);
  p.fields = (sb_field *)lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *p.fields, 0); /* 5: GC-owned */
  p.nfields = n;
  for (i = 0; i < n; i++) {
    sb_field *f = &p.fields[i];
    lua_rawgeti(L, 4, i + 1);
    luaL_checktype(L, -1, LUA_TTABLE);
    f->name = str_field(L, 6, "name", &f->name_len);
    lua_getfield(L, 6, "kind");
    f->kind = luaL_checkoption(L, -1, NULL, kinds) + SB_LONG;
    lua_pop(L, 1);
    f->id = (int)opt_field(L, 6, "id", 0);
    f->col = (int)opt_field(L, 6, "col", 0);
    f->fts = (int)opt_field(L, 6, "fts", 0);
    lua_getfield(L, 6, "lower");
    f->lower = lua_toboolean(L, -1);
    lua_getfield(L, 6, "delimit");
    f->delimit = lua_toboolean(L, -1);
    lua_settop(L, 5);
  }
  qsort(p.fields, (size_t)n, sizeof *p.fields, cmp_field);
  p.nfts = (int)opt_field(L, 3, "nfts", 0);
  p.lo = opt_field(L, 3, "lo", INT64_MIN);
  p.maxv = opt_field(L, 3, "maxv", 1);
  p.doc_id = opt_field(L, 3, "doc_id", 1);
  p.gpt_id = opt_field(L, 3, "gpt_id", 1);
  if (p.maxv < 1) return otsk_error(L, "sql", "build: maxv must be >= 1");
  for (i = 0; i < n; i++)
    if ((p.fields[i].fts < 0 || p.fields[i].fts > p.nfts) || (p.fields[i].kind == SB_TEXT && p.fields[i].fts == 0))
      return otsk_error(L, "sql", "build: field %d: fts column out of range", i + 1);
#if LUA_VERSION_NUM >= 503
  p.jit_binds = 0;
#else
  p.jit_binds = 1;
#endif
  text[0] = str_field(L, 3, "doc", NULL), st[0] = &p.doc;
  text[1] = str_field(L, 3, "has", NULL), st[1] = &p.has;
  text[2] = str_field(L, 3, "gpt", NULL), st[2] = &p.gpt;
  text[3] = str_field(L, 3, "geo", NULL), st[3] = &p.geo;
  text[4] = p.nfts > 0 ? str_field(L, 3, "fts", NULL) : NULL, st[4] = &p.fts;
  /* no Lua error from here on: the statements are finalized below */
  for (i = 0; i < 5 && rc == SQLITE_OK; i++)
    if (text[i]) rc = sqlite3_prepare_v2(sq, text[i], -1, st[i], NULL);
  if (rc == SQLITE_OK) {
    for (i = 0; i < n; i++)
      if (3 + p.fields[i].col > sqlite3_bind_parameter_count(p.doc)) rc = SQLITE_RANGE;
    if (rc != SQLITE_OK) snprintf(err, sizeof err, "build: a value column beyond the doc statement's parameters");
    else rc = sb_build(db, t, sq, &p, err, sizeof err, &corrupt);
  } else {
    snprintf(err, sizeof err, "%s", sqlite3_errmsg(sq));
  }
  for (i = 0; i < 5; i++) sqlite3_finalize(*st[i]);
  if (rc != SQLITE_OK && p.kv_class >= 0) { /* as lkv.c's cursor fails */
    static const char *const kvcodes[] = {"KVError", "KVBusy", "KVCorrupt", "KVFull", "KVNoTable"};
    return otsk_fail(L, kvcodes[p.kv_class <= 4 ? p.kv_class : 0], "sqlite: %s", err);
  }
  if (rc != SQLITE_OK) {
    int c = rc & 0xff;
    const char *code = corrupt || c == SQLITE_CORRUPT || c == SQLITE_NOTADB ? "KVCorrupt"
                     : c == SQLITE_BUSY || c == SQLITE_LOCKED ? "KVBusy" : c == SQLITE_FULL ? "KVFull" : "KVError";
    return otsk_fail(L, code, corrupt ? "%s" : "sqlite: %s", err);
  }
  otsk_pushint64(L, p.rows);
  otsk_pushint64(L, p.doc_id);
  otsk_pushint64(L, p.gpt_id);
  return 3;
}

/* Pushes element it of a key column of type t ('i', 's', 'b'); 0, or -1
 * with *why set when the element is not of that type. */
static int push_elem(lua_State *L, const tuple_item *it, char t, const char **why) {
  if (t == 'i') {
    if (it->type != TUPLE_INT) { *why = "an INTEGER column is not an integer"; return -1; }
    otsk_pushint64(L, it->i);
    return 0;
  }
  if (it->type != TUPLE_BYTES) { *why = "a STRING or BINARY column is not a byte string"; return -1; }
  if (it->len == it->rawlen) {
    lua_pushlstring(L, (const char *)it->raw, it->len);
  } else {
    unsigned char small[256], *p = it->len <= sizeof small ? small : (unsigned char *)malloc(it->len);
    if (p == NULL) { *why = "out of memory"; return -1; }
    tuple_item_copy(it, p);
    lua_pushlstring(L, (const char *)p, it->len);
    if (p != small) free(p);
  }
  return 0;
}

/* Sets the elements of key k[0..kn) of the key types types[0..nt) at
 * list[at+1..at+nt] (list: a stack index); 0, or -1 when k is not such a
 * key (*why set). */
static int put_key(lua_State *L, const unsigned char *k, size_t kn, const char *types, size_t nt, int list, int at,
                   const char **why) {
  tuple_reader r;
  tuple_item it;
  size_t j;
  int rc;
  tuple_reader_init(&r, k, kn, 0);
  for (j = 0; j < nt; j++) {
    rc = tuple_read(&r, &it);
    if (rc != 1) { *why = rc < 0 ? r.err : "fewer elements than the table's primary key"; return -1; }
    if (push_elem(L, &it, types[j], why)) return -1;
    lua_rawseti(L, list, at + (int)j + 1);
  }
  rc = tuple_read(&r, &it);
  if (rc != 0) { *why = rc < 0 ? r.err : "more elements than the table's primary key"; return -1; }
  return 0;
}

/* A key row's columns, made when first read (row.columns: an empty
 * table, the same one from then on): a page of keys is most often read
 * for its keys alone, and the empty table per row was a fifth of its
 * tables. The rows' metatable's __index. */
static int lazy_columns(lua_State *L) {
  if (lua_type(L, 2) != LUA_TSTRING || strcmp(lua_tostring(L, 2), "columns") != 0) return 0;
  lua_newtable(L);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, -2);
  lua_rawset(L, 1);
  return 1;
}

#define KEYROW_MT "otskit.sql.keyrow"

/* Sets list[at+1] = { primary_key = { {name, v[, type]} ... } } with
 * metatable mt (a stack index: columns = {} when first read, lazy_columns)
 * from key k[0..kn) of the key types types[0..nt), the key columns' names
 * at stack indexes names+0..names+nt-1 and the string "primary_key" at
 * pkey (a cell is {name, v, type} when v is a string of an INTEGER
 * (LuaJIT: beyond 2^53) or BINARY column, as otskit.values.key_cell makes
 * it); 0, or -1 when k is not such a key (*why set). Each table is made at
 * its final size. */
static int put_row(lua_State *L, const unsigned char *k, size_t kn, const char *types, size_t nt, int names, int pkey,
                   int mt, int list, int at, const char **why) {
  tuple_reader r;
  tuple_item it;
  size_t j;
  int rc;
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, pkey);
  lua_createtable(L, (int)nt, 0);
  tuple_reader_init(&r, k, kn, 0);
  for (j = 0; j < nt; j++) {
    int typed;
    rc = tuple_read(&r, &it);
    if (rc != 1) { *why = rc < 0 ? r.err : "fewer elements than the table's primary key"; lua_pop(L, 3); return -1; }
    if (push_elem(L, &it, types[j], why)) { lua_pop(L, 3); return -1; }
    typed = types[j] != 's' && lua_type(L, -1) == LUA_TSTRING;
    lua_createtable(L, typed ? 3 : 2, 0);
    lua_pushvalue(L, names + (int)j);
    lua_rawseti(L, -2, 1);
    lua_insert(L, -2);
    lua_rawseti(L, -2, 2);
    if (typed) {
      lua_pushstring(L, types[j] == 'i' ? "INTEGER" : "BINARY");
      lua_rawseti(L, -2, 3);
    }
    lua_rawseti(L, -2, (lua_Integer)j + 1);
  }
  rc = tuple_read(&r, &it);
  if (rc != 0) { *why = rc < 0 ? r.err : "more elements than the table's primary key"; lua_pop(L, 3); return -1; }
  lua_rawset(L, -3);
  lua_pushvalue(L, mt);
  lua_setmetatable(L, -2);
  lua_rawseti(L, list, at + 1);
  return 0;
}

/* Pushes what put_row takes at hand: the rows' metatable, "primary_key"
 * and the nt key column names of the list at stack index names; the
 * metatable's index (pkey: +1, names: +2), or 0 when the stack cannot
 * grow so far. */
static int row_consts(lua_State *L, int names, size_t nt) {
  size_t j;
  int mt;
  if (!lua_checkstack(L, (int)nt + 6)) return 0;
  mt = lua_gettop(L) + 1;
  if (luaL_newmetatable(L, KEYROW_MT)) {
    lua_pushcfunction(L, lazy_columns);
    lua_setfield(L, -2, "__index");
  }
  lua_pushliteral(L, "primary_key");
  for (j = 1; j <= nt; j++) lua_rawgeti(L, names, (lua_Integer)j);
  return mt;
}

static int l_keys(lua_State *L) {
  kv_db *db = checkdb(L);
  sqlite3_stmt *st;
  int rc = SQLITE_DONE, n = 0, ret = 0, at = 0, list, ptr = 0, pkey = 0, names = 0, mt = 0;
  lua_Integer maxrows = luaL_optinteger(L, 5, -1), skip = luaL_optinteger(L, 6, 0), total = 0;
  lua_Integer mark = luaL_optinteger(L, 9, 0);
  int count = lua_toboolean(L, 7), rows = !lua_isnoneornil(L, 10);
  size_t nt;
  const char *types = luaL_checklstring(L, 8, &nt), *why = NULL;
  if (nt == 0 || strspn(types, "isb") != nt) return luaL_argerror(L, 8, "key types: one of i, s, b per column");
  if (rows) {
    size_t j;
    luaL_checktype(L, 10, LUA_TTABLE);
    for (j = 1; j <= nt; j++) {
      lua_rawgeti(L, 10, (lua_Integer)j);
      if (lua_type(L, -1) != LUA_TSTRING) return luaL_argerror(L, 10, "key names: one string per column");
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 10);
  st = prepare_bound(L, db, &ret, &ptr);
  if (st == NULL) return ret;
  lua_createtable(L, maxrows > 0 && maxrows < 4096 ? (int)(maxrows * (lua_Integer)(rows ? 1 : nt)) : 0, 0);
  list = lua_gettop(L);
  lua_pushnil(L); /* the mark row's key */
  if (rows) { /* the rows' metatable, "primary_key" and the key columns' names, at hand */
    mt = row_consts(L, 10, nt);
    if (mt == 0) {
      sqlite3_reset(st);
      if (ptr) sqlite3_clear_bindings(st);
      return otsk_error(L, "sql", "keys: too many key columns");
    }
    pkey = mt + 1;
    names = mt + 2;
  }
  while ((count || maxrows < 0 || n < maxrows) && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const unsigned char *k;
    size_t kn;
    total++;
    if (skip > 0) { skip--; continue; }
    if (maxrows >= 0 && n >= maxrows) continue; /* counting only */
    k = (const unsigned char *)sqlite3_column_blob(st, 0);
    kn = (size_t)sqlite3_column_bytes(st, 0);
    if (k == NULL || sqlite3_column_type(st, 0) != SQLITE_BLOB) { why = "not a key"; break; }
    n++;
    if (n == mark) {
      lua_pushlstring(L, (const char *)k, kn);
      lua_replace(L, list + 1);
    }
    if (rows) {
      if (put_row(L, k, kn, types, nt, names, pkey, mt, list, at, &why)) break;
      at++;
    } else {
      if (put_key(L, k, kn, types, nt, list, at, &why)) break;
      at += (int)nt;
    }
  }
  if (why != NULL) {
    sqlite3_reset(st);
    if (ptr) sqlite3_clear_bindings(st);
    return otsk_fail(L, "KVCorrupt", "a stored row key is damaged: %s", why);
  }
  if (!count && maxrows >= 0 && n >= maxrows) rc = SQLITE_DONE;
  sqlite3_reset(st);
  if (ptr) sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) return fail(L, db, rc);
  lua_pushvalue(L, list);
  lua_pushinteger(L, n);
  lua_pushinteger(L, total);
  lua_pushvalue(L, list + 1);
  return 4;
}

/* The sort value of a row (its second column) as top_keys remembers the
 * last one seen: its type, the number, or its bytes (a string at a stack
 * slot, so the pointer stays valid). */
typedef struct {
  int type;
  sqlite3_int64 i;
  double r;
  const char *s;
  size_t n;
} sortval;

/* whether INTEGER i and REAL r are the same number (SQLite compares them
 * exactly) */
static int int_is_real(sqlite3_int64 i, double r) {
  if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0) || r != floor(r)) return 0;
  return (sqlite3_int64)r == i;
}

/* whether column 1 of st's row equals v as SQLite's ordering compares it
 * (so that the rows of one run of equal values in an index on it are
 * exactly those of one value here): numbers by value, an INTEGER and a REAL
 * alike; TEXT and BLOB by their bytes (BINARY); NULL equals NULL */
static int same_sortval(sqlite3_stmt *st, const sortval *v) {
  int t = sqlite3_column_type(st, 1);
  if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
    if (v->type == SQLITE_INTEGER)
      return t == SQLITE_INTEGER ? sqlite3_column_int64(st, 1) == v->i : int_is_real(v->i, sqlite3_column_double(st, 1));
    if (v->type == SQLITE_FLOAT)
      return t == SQLITE_FLOAT ? sqlite3_column_double(st, 1) == v->r : int_is_real(sqlite3_column_int64(st, 1), v->r);
    return 0;
  }
  if (t != v->type) return 0;
  if (t == SQLITE_NULL) return 1;
  {
    const void *p = t == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, 1) : sqlite3_column_blob(st, 1);
    size_t n = (size_t)sqlite3_column_bytes(st, 1);
    return n == v->n && (n == 0 || memcmp(p, v->s, n) == 0);
  }
}

/* remembers column 1 of st's row in v (its bytes at stack slot slot) */
static void keep_sortval(lua_State *L, sqlite3_stmt *st, int slot, sortval *v) {
  v->type = sqlite3_column_type(st, 1);
  if (v->type == SQLITE_INTEGER) v->i = sqlite3_column_int64(st, 1);
  else if (v->type == SQLITE_FLOAT) v->r = sqlite3_column_double(st, 1);
  else if (v->type != SQLITE_NULL) {
    const void *p = v->type == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, 1) : sqlite3_column_blob(st, 1);
    size_t n = (size_t)sqlite3_column_bytes(st, 1);
    lua_pushlstring(L, p != NULL ? (const char *)p : "", n);
    lua_replace(L, slot);
    v->s = lua_tolstring(L, slot, &v->n);
  }
}

/* sql.top_keys(db, text, binds, nbinds, max, types, names) -> rows, n |
 * nil, msg, code. text's rows are (key, v) in the order v DESC, key DESC (a
 * backward walk of an index on (..., v, key), which SQLite reads without
 * sorting); rows: its first max rows in the order v DESC, key ASC, as
 * ORDER BY v DESC, key LIMIT max gives them -- for which SQLite sorts each
 * run of equal v in a temporary B-tree (EXPLAIN: "USE TEMP B-TREE FOR RIGHT
 * PART OF ORDER BY"), opened and dropped per statement. Each run of equal v
 * comes back reversed; the run the max-th row ends in is read to its end,
 * its last rows (its smallest keys) kept, as many as the first max rows
 * hold of it. Keys are distinct within a run (a top-level document has one
 * value of the field). Each row as sql.keys builds it with names. */
static int l_top_keys(lua_State *L) {
  kv_db *db = checkdb(L);
  sqlite3_stmt *st;
  int rc = SQLITE_DONE, ret = 0, ptr = 0, n = 0, c, head = 0, i, a, keys, list, vslot, at = 0, mt, *run;
  lua_Integer max = luaL_checkinteger(L, 5);
  size_t nt, j;
  const char *types = luaL_checklstring(L, 6, &nt), *why = NULL;
  sortval v;
  luaL_argcheck(L, max >= 1 && max <= 4096, 5, "max: 1..4096 rows");
  if (nt == 0 || strspn(types, "isb") != nt) return luaL_argerror(L, 6, "key types: one of i, s, b per column");
  luaL_checktype(L, 7, LUA_TTABLE);
  for (j = 1; j <= nt; j++) {
    lua_rawgeti(L, 7, (lua_Integer)j);
    if (lua_type(L, -1) != LUA_TSTRING) return luaL_argerror(L, 7, "key names: one string per column");
    lua_pop(L, 1);
  }
  lua_settop(L, 7);
  run = (int *)lua_newuserdatauv(L, (size_t)max * sizeof *run, 0); /* 8: each kept row's run */
  lua_createtable(L, (int)max, 0);                                /* 9: the kept keys */
  keys = lua_gettop(L);
  lua_pushnil(L);                                                 /* 10: v's bytes */
  vslot = lua_gettop(L);
  st = prepare_bound(L, db, &ret, &ptr);
  if (st == NULL) return ret;
  memset(&v, 0, sizeof v);
  while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const void *k = sqlite3_column_blob(st, 0);
    if (k == NULL || sqlite3_column_type(st, 0) != SQLITE_BLOB) { why = "not a key"; break; }
    lua_pushlstring(L, (const char *)k, (size_t)sqlite3_column_bytes(st, 0));
    lua_rawseti(L, keys, n + 1);
    if (n == 0 || !same_sortval(st, &v)) {
      run[n] = n == 0 ? 0 : run[n - 1] + 1;
      keep_sortval(L, st, vslot, &v);
    } else {
      run[n] = run[n - 1];
    }
    n++;
  }
  if (why == NULL && n == max) {
    /* the last run to its end: its last c keys, in a ring over its slots
     * keys[a+1..n] (head: the oldest) */
    for (a = n; a > 0 && run[a - 1] == run[n - 1]; a--) {}
    c = n - a;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && same_sortval(st, &v)) {
      const void *k = sqlite3_column_blob(st, 0);
      if (k == NULL || sqlite3_column_type(st, 0) != SQLITE_BLOB) { why = "not a key"; break; }
      lua_pushlstring(L, (const char *)k, (size_t)sqlite3_column_bytes(st, 0));
      lua_rawseti(L, keys, a + head + 1);
      head = (head + 1) % c;
    }
    if (rc == SQLITE_ROW) rc = SQLITE_DONE; /* (the next run: not needed) */
  }
  sqlite3_reset(st);
  if (ptr) sqlite3_clear_bindings(st);
  if (why != NULL) return otsk_fail(L, "KVCorrupt", "a stored row key is damaged: %s", why);
  if (rc != SQLITE_DONE) return fail(L, db, rc);
  lua_createtable(L, n, 0);
  list = lua_gettop(L);
  mt = row_consts(L, 7, nt);
  if (mt == 0) return otsk_error(L, "sql", "top_keys: too many key columns");
  for (a = 0; a < n; a = i) {
    int b, last;
    for (i = a; i < n && run[i] == run[a]; i++) {}
    last = i == n; /* the last run: its ring starts at head */
    for (b = i - a - 1; b >= 0; b--) {
      size_t kn;
      const char *k;
      lua_rawgeti(L, keys, a + (last ? (head + b) % (i - a) : b) + 1);
      k = lua_tolstring(L, -1, &kn);
      if (put_row(L, (const unsigned char *)k, kn, types, nt, mt + 2, mt + 1, mt, list, at, &why)) {
        return otsk_fail(L, "KVCorrupt", "a stored row key is damaged: %s", why);
      }
      lua_pop(L, 1);
      at++;
    }
  }
  lua_pushvalue(L, list);
  lua_pushinteger(L, n);
  return 2;
}

static const char null_marker = 0;

int otsk_open_sql(lua_State *L) {
  static const luaL_Reg fns[] = {{"exec", l_exec}, {"rows", l_rows}, {"keys", l_keys}, {"top_keys", l_top_keys}, {"build", l_build},
                                  {"deadline", l_deadline}, {NULL, NULL}};
  lua_newtable(L);
  otsk_setfuncs(L, fns);
  lua_pushlightuserdata(L, (void *)&null_marker);
  lua_setfield(L, -2, "NULL");
  return 1;
}
