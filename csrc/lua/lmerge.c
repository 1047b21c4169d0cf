/* lmerge.c -- Lua binding of merge.c: otskit.core.merge (merges are pooled
 * by lmpool.c; resume tokens are core.resume, lresume.c).
 * A merge object keeps each source's current batch (the Lua array of rows
 * pushed last) in its user value, the keys of those rows in C. */
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "resume.h"
#include "laux.h"
#include "lmpool.h"
#include "merge.h"
#include "parts.h"
#include "tuple.h"

#define MT "otskit.merge"
#define CHUNK 1024           /* items per merge_pull call */
#define MAX_PK 16            /* key columns of a typed key */

#if OTSKIT_LUA51
#define get_uv(L, i) lua_getfenv((L), (i))
#define set_uv(L, i) lua_setfenv((L), (i))
#else
#define get_uv(L, i) lua_getiuservalue((L), (i), 1)
#define set_uv(L, i) lua_setiuservalue((L), (i), 1)
#endif

enum { K_FIELD, K_INDEX, K_PK };

typedef struct lmerge {
  merge *m;
  int k, mode, npk;
  lua_Integer index;          /* K_INDEX: row[index] */
  int pk[MAX_PK];             /* K_PK: primary-key column positions */
  tuple_buf tb;               /* K_PK: the encoding of one row's key */
  merge_item items[CHUNK];
  int slot[MERGE_MAX_SOURCES]; /* l_pull: stack index of source i's batch, 0 = not pushed */
} lmerge;

static lmerge *check(lua_State *L) {
  lmerge *u = (lmerge *)luaL_checkudata(L, 1, MT);
  if (!u->m) otsk_error(L, "merge", "merge is closed");
  return u;
}

/* new(k, order_desc, dedup, limit, key) -> merge; key: field name, array
 * index, or list of primary-key column positions. uv: [0] = field name,
 * [i] = batch of source i. */
static int l_new(lua_State *L) {
  int64_t k = otsk_checkint64(L, 1, "merge", "sources");
  int desc = lua_toboolean(L, 2), dedup = lua_toboolean(L, 3);
  int64_t limit = lua_isnoneornil(L, 4) ? 0 : otsk_checkint64(L, 4, "merge", "limit");
  lmerge *u;
  int kt = lua_type(L, 5);
  if (k < 1 || k > MERGE_MAX_SOURCES) return otsk_error(L, "merge", "sources must be 1..1024");
  if (limit < 0) return otsk_error(L, "merge", "limit must be >= 0");
  u = (lmerge *)lua_newuserdatauv(L, sizeof *u, 1);
  memset(u, 0, sizeof *u);
  luaL_getmetatable(L, MT);
  lua_setmetatable(L, -2);
  lua_newtable(L);
  if (kt == LUA_TSTRING) {
    u->mode = K_FIELD;
    lua_pushvalue(L, 5);
    lua_rawseti(L, -2, 0);
  } else if (kt == LUA_TNUMBER) {
    u->mode = K_INDEX;
    u->index = (lua_Integer)otsk_checkint64(L, 5, "merge", "key");
    if (u->index < 1) return otsk_error(L, "merge", "key index must be >= 1");
  } else if (kt == LUA_TTABLE) {
    int i, n = (int)lua_rawlen(L, 5);
    u->mode = K_PK;
    if (n < 1 || n > MAX_PK) return otsk_error(L, "merge", "key must list 1..%d primary-key positions", MAX_PK);
    for (i = 1; i <= n; i++) {
      int64_t p;
      lua_rawgeti(L, 5, i);
      p = otsk_checkint64(L, -1, "merge", "key position");
      lua_pop(L, 1);
      if (p < 1 || p > 64) return otsk_error(L, "merge", "key positions must be 1..64");
      u->pk[i - 1] = (int)p;
    }
    u->npk = n;
  } else {
    return otsk_error(L, "merge", "key must be a field name, an array index or a list of primary-key positions");
  }
  set_uv(L, -2);
  tuple_buf_init(&u->tb);
  u->k = (int)k;
  u->m = otsk_mpool_take(L, (int)k, desc, dedup, (uint64_t)limit);
  if (!u->m) return otsk_error(L, "merge", "out of memory");
  return 1;
}

static int l_gc(lua_State *L) {
  lmerge *u = (lmerge *)luaL_checkudata(L, 1, MT);
  if (u->m) {
    merge *m = u->m;
    u->m = NULL;
    otsk_mpool_give(L, m);
    tuple_buf_free(&u->tb);
    /* drop the batches now: a finalized userdata lives one more GC cycle */
    lua_newtable(L);
    set_uv(L, 1);
  }
  return 0;
}

static int checksrc(lua_State *L, int idx, const lmerge *u) {
  int64_t s = otsk_checkint64(L, idx, "merge", "source");
  if (s < 1 || s > u->k) otsk_error(L, "merge", "source %d out of range 1..%d", (int)s, u->k);
  return (int)s - 1;
}

/* The value of a primary-key column, on the stack top: pk[p] is either
 * {name, value}, {name = .., value = ..} or the bare value. */
static void pk_value(lua_State *L, int pkidx, int p) {
  lua_rawgeti(L, pkidx, p);
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_rawgeti(L, -1, 2);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_getfield(L, -1, "value");
    }
    lua_remove(L, -2);
  }
}

/* Encodes the typed key of the row on the stack top into u->tb. Returns
 * NULL or an error message (pushed). */
static const char *encode_pk(lua_State *L, lmerge *u) {
  int row = lua_gettop(L), pkidx, i;
  u->tb.len = 0;
  lua_getfield(L, row, "primary_key");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_getfield(L, row, "primaryKey");
  }
  if (lua_type(L, -1) != LUA_TTABLE) return "has no primary_key table";
  pkidx = lua_gettop(L);
  for (i = 0; i < u->npk; i++) {
    int t, rc = 0;
    pk_value(L, pkidx, u->pk[i]);
    t = lua_type(L, -1);
    if (t == LUA_TSTRING) {
      size_t n;
      const char *s = lua_tolstring(L, -1, &n);
      rc = tuple_put_bytes(&u->tb, s, n);
    } else if (t == LUA_TNUMBER) {
      int64_t v;
      const char *why = NULL;
      if (!otsk_toint64(L, -1, &v, &why))
        return lua_pushfstring(L, "primary-key column %d: %s", u->pk[i], why);
      rc = tuple_put_int(&u->tb, v);
    } else {
      return lua_pushfstring(L, "primary-key column %d must be an integer or a string, got %s",
                             u->pk[i], luaL_typename(L, -1));
    }
    if (rc) return "out of memory";
    lua_pop(L, 1);
  }
  lua_settop(L, row);
  return NULL;
}

/* The error for row i of the batch at index 3 whose key was not a string. */
static const char *row_error(lua_State *L, const lmerge *u, size_t i) {
  lua_rawgeti(L, 3, (lua_Integer)i);
  if (lua_type(L, -1) != LUA_TTABLE) return lua_pushfstring(L, "is a %s, not a table", luaL_typename(L, -1));
  if (u->mode == K_FIELD) {
    lua_pushvalue(L, 6);
    lua_rawget(L, -2);
  } else {
    lua_rawgeti(L, -1, u->index);
  }
  if (lua_isnil(L, -1)) return "has no key";
  return lua_pushfstring(L, "key must be a string, got %s", luaL_typename(L, -1));
}

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* Byte keys, WIN rows at a time: first every row and its key onto the
 * stack with the key's string prefetched (the rows' strings may be
 * scattered in memory: reading them one after another would wait on each),
 * then the keys into the merge. */
#define WIN 128

/* lua_rawgeti / lua_rawget returning the type of the value pushed, as
 * they do from Lua 5.3 on (one API call less per row) */
#if OTSKIT_LUA51
static int rawgeti_t(lua_State *L, int idx, lua_Integer n) {
  lua_rawgeti(L, idx, (int)n);
  return lua_type(L, -1);
}
static int rawget_t(lua_State *L, int idx) {
  lua_rawget(L, idx);
  return lua_type(L, -1);
}
#else
#define rawgeti_t(L, idx, n) lua_rawgeti((L), (idx), (n))
#define rawget_t(L, idx) lua_rawget((L), (idx))
#endif

static const char *push_bytes(lua_State *L, lmerge *u, int src, size_t n, size_t *bad) {
  size_t i0, j, ok, kl[WIN];
  const char *kp[WIN];
  int rc;
  unsigned char isstr[WIN], istab[WIN];
  for (i0 = 1; i0 <= n; i0 += WIN) {
    size_t cnt = n - i0 + 1 < WIN ? n - i0 + 1 : WIN;
    int keys = 7 + (int)cnt; /* rows at 7.., keys at keys.. */
    for (j = 0; j < cnt; j++) {
      /* the row's table header; not dereferenced here */
      istab[j] = rawgeti_t(L, 3, (lua_Integer)(i0 + j)) == LUA_TTABLE;
      if (istab[j]) PREFETCH(lua_topointer(L, -1));
    }
    for (j = 0; j < cnt; j++) {
      const char *p;
      int t, row = 7 + (int)j;
      if (!istab[j]) {
        lua_pushnil(L);
        isstr[j] = 0; /* row_error tells what the row was */
        continue;
      }
      if (u->mode == K_FIELD) {
        lua_pushvalue(L, 6);
        t = rawget_t(L, row);
      } else {
        t = rawgeti_t(L, row, u->index);
      }
      isstr[j] = t == LUA_TSTRING;
      /* the string's header and the bytes after it; not dereferenced here */
      p = isstr[j] ? (const char *)lua_topointer(L, -1) : NULL;
      if (p) {
        PREFETCH(p);
        PREFETCH(p + 48);
      }
    }
    /* the keys up to the first row without one, then one merge_add_n */
    for (j = 0; j < cnt && isstr[j]; j++) kp[j] = lua_tolstring(L, keys + (int)j, &kl[j]);
    ok = j;
    rc = merge_add_n(u->m, src, kp, kl, ok, &j);
    if (rc != MERGE_OK) {
      *bad = i0 + j;
      return rc == MERGE_EORDER ? "is out of order in its source" : "out of memory";
    }
    if (ok < cnt) {
      *bad = i0 + ok;
      return row_error(L, u, i0 + ok);
    }
    lua_settop(L, 6);
  }
  return NULL;
}

/* The typed-key rows of one push, run under lua_pcall: 1 = pk_job,
 * 2 = the rows. Returns nil or the message for row jb->i. */
typedef struct { lmerge *u; int src; size_t n, i; } pk_job;

static int pk_rows(lua_State *L) {
  pk_job *jb = (pk_job *)lua_touserdata(L, 1);
  lmerge *u = jb->u;
  size_t i;
  for (i = 1; i <= jb->n; i++) {
    const char *why = NULL;
    jb->i = i;
    lua_settop(L, 2);
    lua_rawgeti(L, 2, (lua_Integer)i);
    if (lua_type(L, -1) != LUA_TTABLE) {
      why = lua_pushfstring(L, "is a %s, not a table", luaL_typename(L, -1));
    } else {
      why = encode_pk(L, u);
      if (!why) {
        int rc = merge_add(u->m, jb->src, u->tb.p, u->tb.len);
        if (rc == MERGE_EORDER) why = "is out of order in its source";
        else if (rc != MERGE_OK) why = "out of memory";
      }
    }
    if (why) {
      lua_pushstring(L, why);
      return 1;
    }
  }
  jb->i = jb->n;
  lua_pushnil(L);
  return 1;
}

/* m:push(i, rows, done): hands source i its next batch (a Lua array of
 * rows in the merge order) and whether the source ends with it. */
static int l_push(lua_State *L) {
  lmerge *u = check(L);
  int src = checksrc(L, 2, u), rc, st;
  int done = lua_toboolean(L, 4);
  size_t i, n;
  const char *why = NULL;
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 4);
  n = (size_t)lua_rawlen(L, 3);
  st = merge_state(u->m, src);
  if (st == MERGE_S_DONE) return otsk_error(L, "merge", "source %d pushed after done", src + 1);
  if (st == MERGE_S_ROWS) return otsk_error(L, "merge", "source %d pushed before its rows were merged", src + 1);
  if (!lua_checkstack(L, 2 * WIN + 8)) return otsk_error(L, "merge", "stack overflow");
  get_uv(L, 1);          /* 5: uv */
  lua_rawgeti(L, 5, 0);  /* 6: field name (K_FIELD) */
  /* the batch is kept first: storing it may raise (out of memory), and
   * the merge must never hold keys of rows it cannot hand out */
  lua_pushvalue(L, 3);
  lua_rawseti(L, 5, src + 1);
  if (merge_begin(u->m, src, n) != MERGE_OK) return otsk_error(L, "merge", "out of memory");
  if (u->mode != K_PK) {
    why = push_bytes(L, u, src, n, &i);
  } else {
    /* typed keys read rows with metamethods (__index may raise): run the
     * loop protected, so a raise aborts the batch instead of leaving the
     * source half-begun for every later push */
    pk_job jb;
    jb.u = u; jb.src = src; jb.n = n; jb.i = 0;
    lua_pushcfunction(L, pk_rows);
    lua_pushlightuserdata(L, &jb);
    lua_pushvalue(L, 3);
    rc = lua_pcall(L, 2, 1, 0);
    i = jb.i;
    if (rc != 0) {
      merge_abort(u->m, src);
      return otsk_error(L, "merge", "source %d row %d: %s", src + 1, (int)i,
                        lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error object is not a string");
    }
    if (!lua_isnil(L, -1)) why = lua_tostring(L, -1);
  }
  if (why) {
    merge_abort(u->m, src);
    return otsk_error(L, "merge", "source %d row %d %s", src + 1, (int)i, why);
  }
  merge_end(u->m, src, done);
  return 0;
}

/* m:pull([max [, into]]) -> rows, state: up to max rows in merged order
 * (appended to the array `into` when given, which is returned); state is
 * "more" (stopped at max), "done" (nothing left, or the limit reached) or
 * the source that must be pushed before anything else can be emitted. */
static int l_pull(lua_State *L) {
  lmerge *u = check(L);
  int64_t max = lua_isnoneornil(L, 2) ? INT64_MAX : otsk_checkint64(L, 2, "merge", "max");
  int64_t total = 0, at = 0;
  int base, out;
  merge_status st;
  if (max < 0) return otsk_error(L, "merge", "max must be >= 0");
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    at = (int64_t)lua_rawlen(L, 3);
  }
  lua_settop(L, 3);
  get_uv(L, 1);
  base = lua_gettop(L);
  if (!lua_checkstack(L, u->k + 8)) return otsk_error(L, "merge", "stack overflow");
  if (lua_istable(L, 3)) {
    lua_pushvalue(L, 3);
  } else {
    /* presized for what this pull returns: it stops at the first source
     * that runs out, often long before every buffered row is out */
    uint64_t est = merge_bound(u->m);
    if (est > (uint64_t)max) est = (uint64_t)max;
    lua_createtable(L, (int)(est < 1u << 20 ? est : 1u << 20), 0);
  }
  out = lua_gettop(L);
  /* the batches go onto the stack as their rows come out: a pull of a few
   * rows over many sources touches only those it emits from */
  memset(u->slot, 0, (size_t)u->k * sizeof *u->slot);
  for (;;) {
    size_t got, j, want = max - total < CHUNK ? (size_t)(max - total) : CHUNK;
    st = merge_pull(u->m, u->items, want, &got);
    for (j = 0; j < got; j++) {
      int src = (int)u->items[j].src;
      if (!u->slot[src]) {
        lua_rawgeti(L, base, src + 1);
        u->slot[src] = lua_gettop(L);
      }
      lua_rawgeti(L, u->slot[src], (lua_Integer)u->items[j].row + 1);
      lua_rawseti(L, out, (lua_Integer)(at + ++total));
    }
    if (st == MERGE_ENOMEM) return otsk_error(L, "merge", "out of memory");
    if (st != MERGE_MORE || total >= max) break;
  }
  lua_pushvalue(L, out);
  if (st == MERGE_NEED) lua_pushinteger(L, merge_need(u->m) + 1);
  else lua_pushstring(L, st == MERGE_END ? "done" : "more");
  return 2;
}

/* m:needs() -> array of the sources that must be pushed (pending). */
static int l_needs(lua_State *L) {
  lmerge *u = check(L);
  int s, n = 0;
  lua_newtable(L);
  for (s = 0; s < u->k; s++)
    if (merge_state(u->m, s) == MERGE_S_PENDING) {
      lua_pushinteger(L, s + 1);
      lua_rawseti(L, -2, ++n);
    }
  return 1;
}

/* m:state(i) -> "pending" | "rows" | "done" */
static int l_state(lua_State *L) {
  lmerge *u = check(L);
  static const char *const names[] = {"pending", "rows", "done"};
  lua_pushstring(L, names[merge_state(u->m, checksrc(L, 2, u))]);
  return 1;
}

/* m:last() -> source of the last emitted row (or nil), its internal key */
static int l_last(lua_State *L) {
  lmerge *u = check(L);
  const unsigned char *k;
  size_t n;
  int s = merge_last(u->m, &k, &n);
  if (s < 0) return 0;
  lua_pushinteger(L, s + 1);
  lua_pushlstring(L, (const char *)k, n);
  return 2;
}

/* m:_ptr() -> the merge* as a light userdata, for LuaJIT's FFI path. The
 * object must stay referenced while the pointer is used. */
static int l_ptr(lua_State *L) {
  lua_pushlightuserdata(L, check(L)->m);
  return 1;
}

static int l_emitted(lua_State *L) {
  otsk_pushint64(L, (int64_t)merge_emitted(check(L)->m));
  return 1;
}

static int l_exhausted(lua_State *L) {
  lua_pushboolean(L, merge_exhausted(check(L)->m));
  return 1;
}

static const luaL_Reg methods[] = {
  {"push", l_push}, {"pull", l_pull}, {"needs", l_needs}, {"state", l_state},
  {"last", l_last}, {"emitted", l_emitted}, {"exhausted", l_exhausted},
  {"close", l_gc}, {"_ptr", l_ptr}, {NULL, NULL}
};

static const luaL_Reg metamethods[] = {
  OTSK_CLOSE_META(l_gc), {NULL, NULL}
};

static const luaL_Reg funcs[] = {
  {"new", l_new},
  {"_pooled", otsk_mpool_count},
  {NULL, NULL}
};

int otsk_open_merge(lua_State *L) {
  otsk_newclass(L, MT, methods, metamethods);
  otsk_mpool_open(L);
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  return 1;
}
