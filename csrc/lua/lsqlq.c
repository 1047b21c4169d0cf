/* lsqlq.c -- Lua binding of sqlvt.c and fbsql.c: otskit.core.sqlq, the
 * engine under otskit.store.sql.
 *   sqlq.attach(db) -> state: registers the otskit_map module on the kv
 *     db's connection (call once per connection; keep state as long as db)
 *   sqlq.select(db, state, text, { quota, now_ms, timeout_ms, max_rows })
 *     -> { names, decltypes, classes, rows, n, scanned, range_reads,
 *     full_scans } | nil, msg, code. One read-only SELECT (WITH allowed)
 *     prepared under sqlvt_authorize; classes[i]: a bit set of the storage
 *     classes seen in column i (1 INTEGER, 2 REAL, 4 TEXT, 8 BLOB); rows:
 *     lists of values (NULL -> nil, INTEGER as otskit pushes int64s).
 *     Codes: OTSParameterInvalid (syntax, unknown table or column, not a
 *     single SELECT), OTSUnsupportOperation (a denied function or
 *     statement), OTSQuotaExhausted (quota rows read, or max_rows rows
 *     returned), OTSRequestTimeout (timeout_ms passed),
 *     OTSInternalServerError (the store failed).
 *   sqlq.parse_create(text) -> name, { {name, decltype, pkpos}, ... } |
 *     nil, msg: a CREATE TABLE statement parsed by SQLite on a private
 *     in-memory connection (nothing else is allowed to run there).
 *   sqlq.encode(columns, rows [, n]) -> bytes: the FlatBuffers result set
 *     (columns: { {name, type} } with the service's type names).
 *   sqlq.decode(bytes) -> columns, rows, n | nil, msg, "CorruptMessage". */
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "fbsql.h"
#include "kvsql.h"
#include "laux.h"
#include "parts.h"
#include "sqlvt.h"

#define STATE "otskit.sqlq.state"
#define BOX "otskit.sqlq.box"

/* What a Lua error (out of memory) must not leak: a malloc'ed buffer or a
 * private SQLite connection, freed by the box's __gc if not by the call. */
typedef struct { void *mem; sqlite3 *db; } box;

static box *new_box(lua_State *L) {
  box *b = (box *)lua_newuserdata(L, sizeof *b);
  b->mem = NULL, b->db = NULL;
  luaL_getmetatable(L, BOX);
  lua_setmetatable(L, -2);
  return b;
}

static void box_release(box *b) {
  free(b->mem);
  if (b->db) {
    sqlite3_stmt *p;
    while ((p = sqlite3_next_stmt(b->db, NULL)) != NULL) sqlite3_finalize(p);
    sqlite3_close(b->db);
  }
  b->mem = NULL, b->db = NULL;
}

static int box_gc(lua_State *L) {
  box_release((box *)luaL_checkudata(L, 1, BOX));
  return 0;
}

static kv_db *checkdb(lua_State *L) {
  kv_db **u = (kv_db **)luaL_checkudata(L, 1, "otskit.kv.db");
  if (*u == NULL) otsk_error(L, "sqlq", "db is closed");
  return *u;
}

static int l_attach(lua_State *L) {
  kv_db *db = checkdb(L);
  sqlvt_state *st = (sqlvt_state *)lua_newuserdata(L, sizeof *st);
  memset(st, 0, sizeof *st);
  luaL_getmetatable(L, STATE);
  lua_setmetatable(L, -2);
  if (sqlvt_register(db, st) != SQLITE_OK) return otsk_fail(L, "OTSInternalServerError", "sqlite: %s", kvsql_errmsg(db));
  return 1;
}

/* what a call unwound by a Lua error (out of memory) left behind */
static void leftover(sqlvt_state *st) {
  kvsql_deadline_end(st->db);
  if (st->stmt) sqlite3_finalize(st->stmt);
  st->stmt = NULL;
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

static const char *prepare_code(const char *msg) {
  if (strstr(msg, "not authorized") || strstr(msg, "prohibited")) return "OTSUnsupportOperation";
  return "OTSParameterInvalid";
}

static int collect(lua_State *L);

static int l_select(lua_State *L) {
  kv_db *db = checkdb(L);
  sqlvt_state *state = (sqlvt_state *)luaL_checkudata(L, 2, STATE);
  size_t len;
  const char *text = luaL_checklstring(L, 3, &len), *tail = NULL;
  sqlite3 *sq = (sqlite3 *)kv_sqlite(db);
  sqlite3_stmt *st = NULL, *more = NULL;
  sqlvt_state *g;
  int rc;
  int64_t max_rows;
  luaL_checktype(L, 4, LUA_TTABLE);
  g = state;
  leftover(state);
  state->quota = otsk_optintfield(L, 4, "quota", 100000, -1, INT64_MAX, "sqlq");
  state->now_ms = otsk_optintfield(L, 4, "now_ms", 0, INT64_MIN, INT64_MAX, "sqlq");
  g->timeout_ms = otsk_optintfield(L, 4, "timeout_ms", 30000, -1, INT64_MAX, "sqlq");
  max_rows = otsk_optintfield(L, 4, "max_rows", 100000, 0, INT64_MAX, "sqlq");
  state->scanned = state->range_reads = state->full_scans = 0;
  state->over_quota = 0;
  g->timed_out = 0;
  if (len > 0x7fffffff) return otsk_fail(L, "OTSParameterInvalid", "the statement is too long");
  /* what may allocate (raise on out of memory) comes before the statement
   * exists: from prepare to lua_pcall nothing may unwind past it */
  luaL_checkstack(L, 8, "sqlq.select");
  lua_pushcfunction(L, collect);
  sqlite3_set_authorizer(sq, sqlvt_authorize, NULL);
  rc = sqlite3_prepare_v2(sq, text, (int)len, &st, &tail);
  if (rc == SQLITE_OK && st != NULL && tail != NULL) {
    /* nothing but blanks, comments and semicolons may follow */
    const char *end = text + len;
    while (tail < end && rc == SQLITE_OK) {
      const char *t2 = NULL;
      rc = sqlite3_prepare_v2(sq, tail, (int)(end - tail), &more, &t2);
      if (more != NULL) { sqlite3_finalize(more); more = NULL; rc = SQLITE_MISUSE; break; }
      if (t2 == NULL || t2 == tail) break;
      tail = t2;
    }
    if (rc == SQLITE_MISUSE) {
      sqlite3_set_authorizer(sq, NULL, NULL);
      sqlite3_finalize(st);
      return otsk_fail(L, "OTSParameterInvalid", "one statement a request: more follows the first");
    }
  }
  sqlite3_set_authorizer(sq, NULL, NULL);
  if (rc != SQLITE_OK) {
    /* the message copied and the statement finalized before anything that
     * may raise: an unfinalized statement keeps its connection from closing */
    char m[512];
    snprintf(m, sizeof m, "%s", sqlite3_errmsg(sq));
    sqlite3_finalize(st);
    return otsk_fail(L, prepare_code(m), "%s", m);
  }
  if (st == NULL) return otsk_fail(L, "OTSParameterInvalid", "an empty statement");
  if (!sqlite3_stmt_readonly(st) || sqlite3_stmt_isexplain(st)) {
    sqlite3_finalize(st);
    return otsk_fail(L, "OTSUnsupportOperation", "Operation not supported: only SELECT reads the mapping tables");
  }
  state->stmt = st;
  lua_pushlightuserdata(L, st);
  lua_pushlightuserdata(L, state);
  lua_pushinteger(L, (lua_Integer)max_rows);
  {
    int top = lua_gettop(L) - 4;
    if (lua_pcall(L, 3, LUA_MULTRET, 0) != 0) {
      leftover(state);
      return lua_error(L);
    }
    return lua_gettop(L) - top;
  }
}

/* The rows of the prepared statement (args: st, state, max_rows), run
 * under lua_pcall by l_select: a Lua error (out of memory) while the rows
 * are built is caught there, and the statement finalized. */
static int collect(lua_State *L) {
  sqlite3_stmt *st = (sqlite3_stmt *)lua_touserdata(L, 1);
  sqlvt_state *state = (sqlvt_state *)lua_touserdata(L, 2), *g = state;
  int64_t max_rows = (int64_t)lua_tointeger(L, 3), n = 0;
  sqlite3 *sq = sqlite3_db_handle(st);
  int rc, ncol, i, *classes;
  ncol = sqlite3_column_count(st);
  lua_createtable(L, 0, 8);
  lua_createtable(L, ncol, 0);
  lua_createtable(L, ncol, 0);
  for (i = 0; i < ncol; i++) {
    const char *nm = sqlite3_column_name(st, i), *dt = sqlite3_column_decltype(st, i);
    lua_pushstring(L, nm ? nm : "");
    lua_rawseti(L, -3, i + 1);
    lua_pushstring(L, dt ? dt : "");
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -3, "decltypes");
  lua_setfield(L, -2, "names");
  classes = (int *)lua_newuserdata(L, sizeof(int) * (size_t)(ncol ? ncol : 1));
  memset(classes, 0, sizeof(int) * (size_t)(ncol ? ncol : 1));
  lua_newtable(L); /* rows */
  /* (the time limit's state is the connection's: a Lua error raised
   * while stepping leaves nothing dangling) */
  if (kvsql_deadline(state->db, g->timeout_ms) != SQLITE_OK) return luaL_error(L, "sqlq: out of memory");
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (n >= max_rows) { rc = -1; break; }
    lua_createtable(L, ncol, 0);
    for (i = 0; i < ncol; i++) {
      int ty = sqlite3_column_type(st, i);
      classes[i] |= ty == SQLITE_INTEGER ? 1 : ty == SQLITE_FLOAT ? 2 : ty == SQLITE_TEXT ? 4 : ty == SQLITE_BLOB ? 8 : 0;
      push_col(L, st, i);
      lua_rawseti(L, -2, i + 1);
    }
    lua_rawseti(L, -2, (int)++n);
  }
  g->timed_out = kvsql_deadline_end(state->db) == KVSQL_INTERRUPTED;
  if (rc != SQLITE_DONE) {
    const char *m = rc == -1 ? "" : sqlite3_errmsg(sq);
    const char *code = "OTSParameterInvalid";
    char buf[512];
    if (rc == -1) {
      snprintf(buf, sizeof buf, "The sql result rows exceed the quota! Result quota is %lld rows.", (long long)max_rows);
      code = "OTSQuotaExhausted";
    } else if (state->over_quota) {
      snprintf(buf, sizeof buf, "The sql scanned rows of kv exceeds the quota! Scan quota is %lld rows.",
               (long long)state->quota);
      code = "OTSQuotaExhausted";
    } else if (g->timed_out) {
      snprintf(buf, sizeof buf, "The sql query ran longer than %lld ms.", (long long)g->timeout_ms);
      code = "OTSRequestTimeout";
    } else {
      if (strstr(m, "otskit_map:")) code = "OTSInternalServerError";
      else if (strstr(m, "was dropped")) code = "OTSObjectNotExist";
      snprintf(buf, sizeof buf, "%s", m);
    }
    sqlite3_finalize(st);
    state->stmt = NULL;
    lua_pushnil(L);
    lua_pushstring(L, buf);
    lua_pushstring(L, code);
    return 3;
  }
  sqlite3_finalize(st);
  state->stmt = NULL;
  lua_setfield(L, -3, "rows");
  lua_createtable(L, ncol, 0);
  for (i = 0; i < ncol; i++) {
    lua_pushinteger(L, classes[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -3, "classes");
  lua_pop(L, 1); /* classes userdata */
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, -2, "n");
  lua_pushinteger(L, (lua_Integer)state->scanned);
  lua_setfield(L, -2, "scanned");
  lua_pushinteger(L, (lua_Integer)state->range_reads);
  lua_setfield(L, -2, "range_reads");
  lua_pushinteger(L, (lua_Integer)state->full_scans);
  lua_setfield(L, -2, "full_scans");
  return 1;
}

/* CREATE TABLE only: parsing happens here, nothing else may run */
static int create_only(void *arg, int action, const char *a, const char *b, const char *d, const char *t) {
  (void)arg, (void)a, (void)b, (void)d, (void)t;
  if (action == SQLITE_CREATE_TABLE || action == SQLITE_CREATE_INDEX || action == SQLITE_INSERT ||
      action == SQLITE_UPDATE || action == SQLITE_READ)
    return SQLITE_OK;
  return SQLITE_DENY;
}

static int l_parse_create(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len), *tail = NULL;
  sqlite3 *sq = NULL;
  sqlite3_stmt *st = NULL;
  int rc, n = 0;
  char msg[512];
  box *bx;
  if (len > 1000000) return otsk_fail(L, "OTSParameterInvalid", "the statement is too long");
  bx = new_box(L);
  if (sqlite3_open_v2(":memory:", &sq, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_PRIVATECACHE, NULL) != SQLITE_OK) {
    sqlite3_close(sq);
    return otsk_fail(L, "OTSInternalServerError", "sqlite: cannot open a parser");
  }
  bx->db = sq;
  sqlite3_set_authorizer(sq, create_only, NULL);
  rc = sqlite3_prepare_v2(sq, text, (int)len, &st, &tail);
  if (rc == SQLITE_OK && st == NULL) rc = SQLITE_MISUSE, snprintf(msg, sizeof msg, "an empty statement");
  else if (rc != SQLITE_OK) snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(sq));
  if (rc == SQLITE_OK) {
    const char *end = text + len;
    while (tail && tail < end && (*tail == ' ' || *tail == '\t' || *tail == '\n' || *tail == '\r' || *tail == ';')) tail++;
    if (tail && tail < end) rc = SQLITE_MISUSE, snprintf(msg, sizeof msg, "one statement a request: more follows the first");
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    else snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(sq));
  }
  sqlite3_finalize(st);
  st = NULL;
  sqlite3_set_authorizer(sq, NULL, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v2(sq, "SELECT name FROM sqlite_schema WHERE type = 'table'", -1, &st, NULL);
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
      const char *name = (const char *)sqlite3_column_text(st, 0);
      char tname[256];
      snprintf(tname, sizeof tname, "%s", name ? name : "");
      sqlite3_finalize(st);
      st = NULL;
      lua_pushstring(L, tname);
      rc = sqlite3_prepare_v2(sq, "SELECT p.name, p.type, p.pk FROM sqlite_schema s, pragma_table_info(s.name) p "
                                  "WHERE s.type = 'table' ORDER BY p.cid", -1, &st, NULL);
      lua_newtable(L);
      while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *cn = (const char *)sqlite3_column_text(st, 0), *ct = (const char *)sqlite3_column_text(st, 1);
        lua_createtable(L, 3, 0);
        lua_pushstring(L, cn ? cn : "");
        lua_rawseti(L, -2, 1);
        lua_pushstring(L, ct ? ct : "");
        lua_rawseti(L, -2, 2);
        lua_pushinteger(L, sqlite3_column_int(st, 2));
        lua_rawseti(L, -2, 3);
        lua_rawseti(L, -2, ++n);
      }
      sqlite3_finalize(st);
      box_release(bx);
      return 2;
    }
    snprintf(msg, sizeof msg, "not a CREATE TABLE statement");
    rc = SQLITE_MISUSE;
  }
  sqlite3_finalize(st);
  box_release(bx);
  return otsk_fail(L, "OTSParameterInvalid", "%s", msg);
}

static const char *const TYPE_NAMES[] = {"NONE", "LONG", "BOOLEAN", "DOUBLE", "STRING", "BINARY", "STRING_RLE", NULL};

static int l_encode(lua_State *L) {
  size_t ncols, nrows, i, r;
  fbsql_col *cols;
  unsigned char *out = NULL;
  size_t outlen = 0;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  ncols = (size_t)lua_rawlen(L, 1);
  nrows = lua_isnoneornil(L, 3) ? (size_t)lua_rawlen(L, 2) : (size_t)luaL_checkinteger(L, 3);
  /* every array lives in Lua userdata: a raised error frees them */
  cols = (fbsql_col *)lua_newuserdata(L, sizeof(fbsql_col) * (ncols ? ncols : 1));
  memset(cols, 0, sizeof(fbsql_col) * (ncols ? ncols : 1));
  for (i = 0; i < ncols; i++) {
    fbsql_col *c = &cols[i];
    int k;
    lua_rawgeti(L, 1, (int)i + 1);
    if (!lua_istable(L, -1)) return otsk_error(L, "sqlq", "encode: column %d is not a table", (int)i + 1);
    lua_rawgeti(L, -1, 1);
    c->name = luaL_checklstring(L, -1, &c->name_len); /* kept alive by the columns table */
    lua_pop(L, 1);
    lua_rawgeti(L, -1, 2);
    c->type = -1;
    for (k = 1; TYPE_NAMES[k]; k++)
      if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), TYPE_NAMES[k]) == 0) c->type = k;
    if (c->type < FBSQL_LONG || c->type > FBSQL_BINARY)
      return otsk_error(L, "sqlq", "encode: column %d has no type LONG, BOOLEAN, DOUBLE, STRING or BINARY", (int)i + 1);
    lua_pop(L, 2);
    luaL_checkstack(L, 4, "sqlq.encode");
    c->nulls = (unsigned char *)lua_newuserdata(L, nrows ? nrows : 1); /* stays on the stack */
    switch (c->type) {
    case FBSQL_LONG: c->longs = (int64_t *)lua_newuserdata(L, 8 * (nrows ? nrows : 1)); break;
    case FBSQL_DOUBLE: c->doubles = (double *)lua_newuserdata(L, 8 * (nrows ? nrows : 1)); break;
    case FBSQL_BOOLEAN: c->bools = (unsigned char *)lua_newuserdata(L, nrows ? nrows : 1); break;
    default:
      c->strs = (const char *const *)lua_newuserdata(L, sizeof(char *) * (nrows ? nrows : 1));
      c->lens = (size_t *)lua_newuserdata(L, sizeof(size_t) * (nrows ? nrows : 1));
    }
  }
  for (r = 0; r < nrows; r++) {
    lua_rawgeti(L, 2, (int)r + 1);
    if (!lua_istable(L, -1)) return otsk_error(L, "sqlq", "encode: row %d is not a table", (int)r + 1);
    for (i = 0; i < ncols; i++) {
      fbsql_col *c = &cols[i];
      unsigned char *nulls = (unsigned char *)c->nulls;
      lua_rawgeti(L, -1, (int)i + 1);
      nulls[r] = lua_isnil(L, -1);
      if (!nulls[r]) {
        const char *why = NULL;
        switch (c->type) {
        case FBSQL_LONG:
          if (!otsk_toint64(L, -1, (int64_t *)&c->longs[r], &why))
            return otsk_error(L, "sqlq", "encode: row %d column %d: %s", (int)r + 1, (int)i + 1, why);
          break;
        case FBSQL_DOUBLE:
          if (lua_type(L, -1) != LUA_TNUMBER) return otsk_error(L, "sqlq", "encode: row %d column %d: not a number", (int)r + 1, (int)i + 1);
          ((double *)c->doubles)[r] = lua_tonumber(L, -1);
          break;
        case FBSQL_BOOLEAN:
          if (lua_type(L, -1) != LUA_TBOOLEAN) return otsk_error(L, "sqlq", "encode: row %d column %d: not a boolean", (int)r + 1, (int)i + 1);
          ((unsigned char *)c->bools)[r] = (unsigned char)lua_toboolean(L, -1);
          break;
        default:
          if (lua_type(L, -1) != LUA_TSTRING) return otsk_error(L, "sqlq", "encode: row %d column %d: not a string", (int)r + 1, (int)i + 1);
          ((const char **)c->strs)[r] = lua_tolstring(L, -1, &((size_t *)c->lens)[r]); /* alive in the row table */
        }
      } else if (c->type == FBSQL_LONG) ((int64_t *)c->longs)[r] = 0;
      else if (c->type == FBSQL_DOUBLE) ((double *)c->doubles)[r] = 0;
      else if (c->type == FBSQL_BOOLEAN) ((unsigned char *)c->bools)[r] = 0;
      else ((const char **)c->strs)[r] = "", ((size_t *)c->lens)[r] = 0;
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  {
    box *bx = new_box(L);
    i = (size_t)fbsql_write(cols, ncols, nrows, &out, &outlen);
    bx->mem = out;
    if (i != 0) return otsk_error(L, "sqlq", "encode: out of memory");
    lua_pushlstring(L, (const char *)out, outlen);
    box_release(bx);
    return 1;
  }
}

static int l_decode(lua_State *L) {
  size_t len, i, r;
  const char *buf = luaL_checklstring(L, 1, &len), *why = "?";
  fbsql_reader rd;
  fbsql_column *cols;
  if (fbsql_open(&rd, buf, len, &why)) return otsk_fail(L, "CorruptMessage", "SQL result set: %s", why);
  if (rd.ncols > 100000 || rd.nrows > 100000000) return otsk_fail(L, "CorruptMessage", "SQL result set: too large");
  if (rd.ncols > 0 && (uint64_t)rd.nrows > len) return otsk_fail(L, "CorruptMessage", "SQL result set: more rows than bytes");
  cols = (fbsql_column *)lua_newuserdata(L, sizeof(fbsql_column) * (rd.ncols ? rd.ncols : 1));
  lua_createtable(L, (int)rd.ncols, 0);
  for (i = 0; i < rd.ncols; i++) {
    if (fbsql_column_at(&rd, i, &cols[i], &why)) return otsk_fail(L, "CorruptMessage", "SQL result set: %s", why);
    lua_createtable(L, 2, 0);
    lua_pushlstring(L, cols[i].name, cols[i].name_len);
    lua_rawseti(L, -2, 1);
    lua_pushstring(L, cols[i].type == FBSQL_STRING_RLE ? "STRING" : TYPE_NAMES[cols[i].type]);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_createtable(L, (int)rd.nrows, 0);
  for (r = 0; (int64_t)r < rd.nrows; r++) {
    lua_createtable(L, (int)rd.ncols, 0);
    for (i = 0; i < rd.ncols; i++) {
      int64_t l = 0;
      double d = 0;
      int b = 0, rc;
      const char *s = NULL;
      size_t n = 0;
      rc = fbsql_cell(&rd, &cols[i], r, &l, &d, &b, &s, &n, &why);
      if (rc < 0) return otsk_fail(L, "CorruptMessage", "SQL result set: %s", why);
      if (rc == 1) continue;
      switch (cols[i].type) {
      case FBSQL_LONG: otsk_pushint64(L, l); break;
      case FBSQL_DOUBLE: lua_pushnumber(L, d); break;
      case FBSQL_BOOLEAN: lua_pushboolean(L, b); break;
      default: lua_pushlstring(L, s, n);
      }
      lua_rawseti(L, -2, (int)i + 1);
    }
    lua_rawseti(L, -2, (int)r + 1);
  }
  lua_pushinteger(L, (lua_Integer)rd.nrows);
  return 3;
}

/* a statement left by a select unwound by an error is finalized with its state */
static int state_gc(lua_State *L) {
  sqlvt_state *st = (sqlvt_state *)luaL_checkudata(L, 1, STATE);
  if (st->stmt) sqlite3_finalize(st->stmt);
  st->stmt = NULL;
  return 0;
}

int otsk_open_sqlq(lua_State *L) {
  static const luaL_Reg fns[] = {{"attach", l_attach}, {"select", l_select}, {"parse_create", l_parse_create},
                                 {"encode", l_encode}, {"decode", l_decode}, {NULL, NULL}};
  luaL_newmetatable(L, STATE);
  lua_pushcfunction(L, state_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, BOX);
  lua_pushcfunction(L, box_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_newtable(L);
  otsk_setfuncs(L, fns);
  return 1;
}
