/* lmpool.h -- closed merges kept per Lua state for the next merge.new
 * (lmerge.c): a gateway makes a merge per request, and reusing one's grown
 * buffers saves their allocation and page faults. */
#ifndef OTSKIT_LMPOOL_H
#define OTSKIT_LMPOOL_H

#include "compat.h"
#include "merge.h"

/* Creates the state's pool once (in the registry). */
void otsk_mpool_open(lua_State *L);
/* A merge made ready by merge_reset (a pooled one) or merge_new; NULL
 * when out of memory. */
merge *otsk_mpool_take(lua_State *L, int k, int desc, int dedup, uint64_t limit);
/* Keeps m for reuse when the pool has room and m is small, else frees it. */
void otsk_mpool_give(lua_State *L, merge *m);
/* _pooled() -> merges held for reuse (for the specs). */
int otsk_mpool_count(lua_State *L);

#endif
