/* lgetrow.c -- a plain GetRow answered in one C call, for `otskit serve`:
 * kv.get_plan (what the call needs of a table) and db:get_row_answer
 * (the request's protobuf to the answer's, the row read in one statement
 * or one read transaction), used by otskit.store.stream's
 * db:get_row_answer. */
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "getrow.h"
#include "laux.h"
#include "lkv.h"
#include "rowstream.h"

#define PLAN_MT "otskit.kv.get_plan"

typedef struct {
  rs_opts o;                         /* npk, pk_name (into names), pk_type */
  char names[RS_MAX_PK][256];
  char kvname[300];                  /* the table's kv table */
  int64_t maxv, ttl_ms;              /* ttl_ms < 0: none */
  tuple_buf key;                     /* scratch of each call */
  /* verified: at data version v_version, the schema version was v_schema
   * and the generation v_gen (what db:get_row_answer last checked) */
  int verified;
  unsigned v_version;
  int64_t v_schema;
  char v_gen[32];
  size_t v_genlen;
  pb_writer row, out;
} get_plan;

static int plan_gc(lua_State *L) {
  get_plan *p = (get_plan *)luaL_checkudata(L, 1, PLAN_MT);
  tuple_buf_free(&p->key);
  pb_writer_free(&p->row);
  pb_writer_free(&p->out);
  return 0;
}

/* kv.get_plan(kvname, pk, maxv [, ttl_ms]) -> plan: a table's kv table
 * name, key schema ({{name =, type =}, ...}), max_versions and
 * time_to_live (ms; nil: none), for db:get_row_answer. Raises on bad
 * arguments. */
int otsk_kv_get_plan(lua_State *L) {
  size_t kl, i, np;
  const char *kvname = luaL_checklstring(L, 1, &kl);
  get_plan *p;
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 4); /* (the plan is pushed at 5) */
  np = (size_t)lua_rawlen(L, 2);
  if (np < 1 || np > RS_MAX_PK) return otsk_error(L, "kv", "get_plan: pk must have 1 to 4 columns");
  if (kl >= sizeof p->kvname) return otsk_error(L, "kv", "get_plan: table name too long");
  p = (get_plan *)lua_newuserdatauv(L, sizeof *p, 0);
  memset(p, 0, sizeof *p);
  tuple_buf_init(&p->key);
  pb_writer_init(&p->row);
  pb_writer_init(&p->out);
  luaL_setmetatable(L, PLAN_MT);
  memcpy(p->kvname, kvname, kl);
  p->o.npk = np;
  for (i = 0; i < np; i++) {
    const char *name, *ty;
    size_t nl;
    lua_rawgeti(L, 2, (lua_Integer)(i + 1));
    if (lua_type(L, -1) != LUA_TTABLE) return otsk_error(L, "kv", "get_plan: pk entries must be tables");
    lua_getfield(L, -1, "name");
    lua_getfield(L, -2, "type");
    name = lua_tolstring(L, -2, &nl);
    ty = lua_tostring(L, -1);
    if (name == NULL || ty == NULL || nl > 255) return otsk_error(L, "kv", "get_plan: pk entries need name and type");
    memcpy(p->names[i], name, nl);
    p->o.pk_name[i].s = p->names[i];
    p->o.pk_name[i].n = nl;
    p->o.pk_type[i] = strcmp(ty, "INTEGER") == 0 ? RS_PK_INTEGER : strcmp(ty, "STRING") == 0 ? RS_PK_STRING
                    : strcmp(ty, "BINARY") == 0 ? RS_PK_BINARY : 0;
    if (p->o.pk_type[i] == 0) return otsk_error(L, "kv", "get_plan: bad key type %s", ty);
    lua_pop(L, 3);
  }
  p->maxv = otsk_checkint64(L, 3, "kv", "#3 (maxv)");
  if (p->maxv < 1) return otsk_error(L, "kv", "get_plan: maxv must be >= 1");
  p->ttl_ms = -1;
  if (!lua_isnoneornil(L, 4)) {
    p->ttl_ms = otsk_checkint64(L, 4, "kv", "#4 (ttl_ms)");
    if (p->ttl_ms < 0) return otsk_error(L, "kv", "get_plan: ttl_ms must be >= 0");
  }
  return 1;
}

static int cmp_names(const void *a, const void *b) { return rs_name_cmp(a, b); }

static int not_taken(lua_State *L, const char *why) {
  lua_pushboolean(L, 0);
  lua_pushstring(L, why);
  return 2;
}

/* the read transaction's end when the answer is not made here */
static int give_up(lua_State *L, kv_db *db, const char *why) {
  kv_rollback(db);
  return not_taken(L, why);
}

/* the row at p->key of p's kv table into p->row as the read o asks
 * (p->row empty: no row, or none of it selected); *size its read size.
 * NULL, or why not (static text; "damaged": the stored row is not what
 * the schema says). */
static const char *read_row(kv_db *db, get_plan *p, const rs_opts *o, int64_t *size) {
  kv_table *t;
  const void *v;
  size_t vl;
  int rc, found;
  const char *err = NULL;
  *size = 0;
  pb_writer_reset(&p->row);
  t = kv_table_get(db, p->kvname, 0, &found);
  if (t == NULL || !found) return "no kv table";
  rc = kv_get(t, p->key.p, p->key.len, &v, &vl);
  if (rc == KV_NOTFOUND) return NULL;
  if (rc != KV_OK) return "read failed";
  pb_write_header(&p->row);
  rc = rs_row(&p->row, o, p->key.p, p->key.len, v, vl, size, &err);
  kv_get_done(t);
  if (rc < 0) return "damaged";
  if (rc == RS_SKIP) p->row.len = 0;
  return NULL;
}

/* pushes the answer of the row in p->row (stack: 8 is the table) */
static int answered(lua_State *L, get_plan *p, int64_t size) {
  int64_t cu = (size + 4095) / 4096;
  pb_writer_reset(&p->out);
  gr_answer(&p->out, cu < 1 ? 1 : cu, p->row.p, p->row.len);
  if (p->row.oom || p->out.oom) return luaL_error(L, "otskit.kv: out of memory");
  lua_pushlstring(L, (const char *)p->out.p, p->out.len);
  lua_pushlstring(L, (const char *)p->key.p, p->key.len);
  lua_pushvalue(L, 8);
  return 3;
}

/* db:get_row_answer(body, tables, schema, gen, now_ms, max_pk_cell,
 * max_columns) -> answer, key, t | false, why [, t].
 * body: a GetRowRequest; tables: the store's tables by name, each with
 * `_getplan` (kv.get_plan; false: not taken); schema, gen: the schema
 * version and generation those tables were read at (the store's
 * self.schema, self.gen); max_pk_cell, max_columns: the store's limits
 * on a key value's bytes and on columns_to_get. answer: the
 * GetRowResponse body -- the row as of one snapshot, with the consumed
 * read units; key: the row's stored key; t: its table. false: a request
 * or a state this does not answer (why: a short reason; t with why "no
 * plan" when the table has none yet) -- a field beyond table_name,
 * primary_key, columns_to_get, max_versions, cache_blocks; a key or
 * column name the general path would refuse or would take in another
 * type; a table or definition changed since schema, gen; a transaction
 * open; any db failure (nothing left open): the store's general path
 * answers it. Raises only on bad arguments. */
int otsk_kv_get_row_answer(lua_State *L) {
  kv_db *db = otsk_kv_checkdb(L);
  size_t bl, gl, i;
  const char *body = luaL_checklstring(L, 2, &bl), *gen, *why = NULL;
  gr_request r;
  get_plan *p;
  rs_opts o;
  rs_name want[GR_MAX_COLUMNS];
  int64_t schema, now, size = 0, max_columns;
  unsigned version;
  size_t max_pk_cell;
  kv_table *meta;
  const void *v;
  size_t vl;
  int rc, found, known;
  luaL_checktype(L, 3, LUA_TTABLE);
  if (lua_isnil(L, 4)) return not_taken(L, "not synced");
  schema = otsk_checkint64(L, 4, "kv", "#4 (schema)");
  gen = luaL_checklstring(L, 5, &gl);
  now = otsk_checkint64(L, 6, "kv", "#6 (now_ms)");
  max_pk_cell = (size_t)otsk_checkint64(L, 7, "kv", "#7 (max_pk_cell)");
  max_columns = otsk_checkint64(L, 8, "kv", "#8 (max_columns)");
  lua_settop(L, 7);
  if (!gr_parse(body, bl, &r, &why)) return not_taken(L, why);
  if ((int64_t)r.ncolumns > max_columns) return not_taken(L, "too many columns");
  lua_pushlstring(L, r.table.s, r.table.n);
  lua_rawget(L, 3); /* 8: t */
  if (lua_type(L, 8) != LUA_TTABLE) return not_taken(L, "no table");
  lua_getfield(L, 8, "_getplan"); /* 9 */
  if (lua_isnil(L, 9)) { lua_pushboolean(L, 0); lua_pushliteral(L, "no plan"); lua_pushvalue(L, 8); return 3; }
  p = (get_plan *)luaL_testudata(L, 9, PLAN_MT);
  if (p == NULL) return not_taken(L, "not taken for this table");
  /* the read options, as otskit.store's read options make them */
  o = p->o;
  o.want = NULL; o.nwant = 0; o.plain = r.ncolumns == 0;
  for (i = 0; i < r.ncolumns; i++) {
    const gr_bytes *c = &r.columns[i];
    size_t j;
    int key = 0;
    if (!rs_valid_name(c->s, c->n)) return not_taken(L, "a bad column name");
    for (j = 0; j < o.npk; j++)
      if (c->n == o.pk_name[j].n && memcmp(c->s, o.pk_name[j].s, c->n) == 0) key = 1;
    if (!key) { want[o.nwant].s = c->s; want[o.nwant].n = c->n; o.nwant++; }
  }
  if (r.ncolumns > 0) { qsort(want, o.nwant, sizeof want[0], cmp_names); o.want = want; }
  o.maxv = r.max_versions ? r.max_versions : 1;
  if (o.maxv > p->maxv) o.maxv = p->maxv;
  o.lo = p->ttl_ms >= 0 ? now - p->ttl_ms : INT64_MIN;
  o.hi = INT64_MAX;
  p->key.len = 0;
  rc = rs_get_key(r.key.s, r.key.n, &o, max_pk_cell, &p->key, &why);
  if (rc == RS_PUT_OOM) return luaL_error(L, "otskit.kv: out of memory");
  if (rc != RS_PUT_OK) return not_taken(L, why);
  if (kv_in_txn(db)) return not_taken(L, "in a transaction");
  /* the row alone (one statement, its own snapshot) when the data
   * version says nothing changed since this plan last verified schema
   * and gen at that version; else one read transaction that checks them */
  if (p->verified && p->v_schema == schema && gl == p->v_genlen && memcmp(gen, p->v_gen, gl) == 0) {
    if (read_row(db, p, &o, &size) == NULL && kv_data_version(db, &version) && version == p->v_version)
      return answered(L, p, size);
  }
  p->verified = 0;
  if (kv_begin(db, 0) != KV_OK) return not_taken(L, "begin failed");
  if (kv_schema_version(db) != schema) return give_up(L, db, "schema changed");
  meta = kv_table_get(db, "meta", 0, &found);
  if (meta == NULL || !found) return give_up(L, db, "no meta");
  rc = kv_get(meta, "\0gen", 4, &v, &vl);
  if (rc == KV_OK) {
    int same = vl == gl && memcmp(v, gen, gl) == 0;
    kv_get_done(meta);
    if (!same) return give_up(L, db, "generation changed");
  } else if (rc != KV_NOTFOUND || !(gl == 1 && gen[0] == '0')) {
    return give_up(L, db, "generation changed");
  }
  why = read_row(db, p, &o, &size);
  if (why != NULL) return give_up(L, db, why);
  known = kv_data_version(db, &version);
  if (kv_commit(db) != KV_OK) return give_up(L, db, "commit failed");
  if (known && gl <= sizeof p->v_gen) {
    p->verified = 1;
    p->v_version = version;
    p->v_schema = schema;
    memcpy(p->v_gen, gen, gl);
    p->v_genlen = gl;
  }
  return answered(L, p, size);
}

void otsk_kv_getrow_register(lua_State *L) {
  static const luaL_Reg none[] = {{NULL, NULL}};
  static const luaL_Reg meta[] = {{"__gc", plan_gc}, {NULL, NULL}};
  otsk_newclass(L, PLAN_MT, none, meta);
}
