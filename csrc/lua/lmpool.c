/* lmpool.c -- the pool of closed merges of a Lua state (lmpool.h). */
#include <string.h>

#include "laux.h"
#include "lmpool.h"

#define POOL_MT "otskit.merge.pool"
#define POOL_KEY "otskit.merge.pool.instance" /* registry: the pool itself */

/* Closed merges kept for the next new() of this Lua state: their grown
 * buffers are reused instead of freed and faulted in again (a gateway
 * makes a merge per request). Small, so little memory stays held. */
#define POOL_N 2
#define POOL_MAX_BYTES ((size_t)4 << 20)
typedef struct mpool {
  merge *m[POOL_N];
  int n, closed;
} mpool;

static mpool *pool_of(lua_State *L) {
  mpool *p;
  lua_getfield(L, LUA_REGISTRYINDEX, POOL_KEY);
  p = (mpool *)luaL_testudata(L, -1, POOL_MT);
  lua_pop(L, 1);
  return p;
}

/* The pool's own finalizer may run before those of merges (lua_close):
 * they then free instead of pooling. */
static int pool_gc(lua_State *L) {
  mpool *p = (mpool *)luaL_checkudata(L, 1, POOL_MT);
  while (p->n > 0) merge_free(p->m[--p->n]);
  p->closed = 1;
  return 0;
}

merge *otsk_mpool_take(lua_State *L, int k, int desc, int dedup, uint64_t limit) {
  mpool *p = pool_of(L);
  if (p && !p->closed && p->n > 0) {
    merge *m = p->m[--p->n];
    if (merge_reset(m, k, desc, dedup, limit) == MERGE_OK) return m;
    merge_free(m);
  }
  return merge_new(k, desc, dedup, limit);
}

void otsk_mpool_give(lua_State *L, merge *m) {
  mpool *p = pool_of(L);
  if (p && !p->closed && p->n < POOL_N && merge_footprint(m) <= POOL_MAX_BYTES) p->m[p->n++] = m;
  else merge_free(m);
}

int otsk_mpool_count(lua_State *L) {
  mpool *p = pool_of(L);
  lua_pushinteger(L, p ? p->n : 0);
  return 1;
}

void otsk_mpool_open(lua_State *L) {
  static const luaL_Reg pool_meta[] = {{"__gc", pool_gc}, {NULL, NULL}};
  otsk_newclass(L, POOL_MT, NULL, pool_meta);
  lua_getfield(L, LUA_REGISTRYINDEX, POOL_KEY);
  if (lua_isnil(L, -1)) { /* once per Lua state */
    mpool *p = (mpool *)lua_newuserdatauv(L, sizeof *p, 0);
    memset(p, 0, sizeof *p);
    luaL_getmetatable(L, POOL_MT);
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, POOL_KEY);
  }
  lua_pop(L, 1);
}
