/* lbytes.h -- bytes objects: a read-only byte buffer from malloc owned by a
 * userdata, so a big payload (an HTTP response body) can be read by the
 * bindings without first being copied into a Lua string (and counted as
 * Lua heap, which paces the collector). From Lua: #b, b:string(), b:free()
 * (releases the memory now; __gc and __close do it otherwise). */
#ifndef OTSKIT_LBYTES_H
#define OTSKIT_LBYTES_H

#include <stddef.h>
#include "compat.h"

/* A recycler: where freed bytes objects leave their buffer (one, of at
 * most keep_max bytes) for the producer to reuse, so the next payload is
 * written into memory already mapped. Reference-counted: the producer and
 * every bytes object using it hold one reference. */
typedef struct otsk_recycler otsk_recycler;
otsk_recycler *otsk_recycler_new(size_t keep_max); /* one reference; NULL: no memory */
void otsk_recycler_unref(otsk_recycler *r);        /* NULL-safe */
/* The buffer left there (its size in *cap), or NULL; it is no longer kept. */
char *otsk_recycler_take(otsk_recycler *r, size_t *cap);

/* Pushes a bytes object owning p (from malloc, cap bytes, n of them used;
 * NULL when cap is 0); r (or NULL) gets p back when the object is freed.
 * On a memory error p is freed before the error is raised. */
void otsk_pushbytes(lua_State *L, char *p, size_t n, size_t cap, otsk_recycler *r);

/* The bytes of the argument at idx: a string, or a bytes object not yet
 * freed. Raises a Lua argument error for anything else. */
const char *otsk_checkbytes(lua_State *L, int idx, size_t *len);

#endif
