/* lbytes.c -- bytes objects and their recycler (see lbytes.h). */
#include <stdlib.h>

#include "laux.h"
#include "lbytes.h"

#define BYTES_MT "otskit.bytes"

struct otsk_recycler {
  int refs;
  char *p;
  size_t cap, keep_max;
};

otsk_recycler *otsk_recycler_new(size_t keep_max) {
  otsk_recycler *r = calloc(1, sizeof *r);
  if (r == NULL) return NULL;
  r->refs = 1;
  r->keep_max = keep_max;
  return r;
}

void otsk_recycler_unref(otsk_recycler *r) {
  if (r == NULL || --r->refs > 0) return;
  free(r->p);
  free(r);
}

char *otsk_recycler_take(otsk_recycler *r, size_t *cap) {
  char *p = r->p;
  *cap = r->cap;
  r->p = NULL;
  r->cap = 0;
  return p;
}

/* keeps p for reuse when there is room, else frees it */
static void recycle(otsk_recycler *r, char *p, size_t cap) {
  if (r && r->p == NULL && cap <= r->keep_max) {
    r->p = p;
    r->cap = cap;
  } else {
    free(p);
  }
}

typedef struct {
  char *p;
  size_t n, cap;
  otsk_recycler *r;
  int freed;
} bytes;

static bytes *check(lua_State *L, int idx) {
  bytes *b = (bytes *)luaL_checkudata(L, idx, BYTES_MT);
  if (b->freed) otsk_error(L, "bytes", "used after b:free()");
  return b;
}

static int b_free(lua_State *L) {
  bytes *b = (bytes *)luaL_checkudata(L, 1, BYTES_MT);
  if (b->freed) return 0;
  recycle(b->r, b->p, b->cap);
  otsk_recycler_unref(b->r);
  b->p = NULL;
  b->r = NULL;
  b->n = b->cap = 0;
  b->freed = 1;
  return 0;
}

static int b_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check(L, 1)->n);
  return 1;
}

static int b_string(lua_State *L) {
  bytes *b = check(L, 1);
  lua_pushlstring(L, b->p ? b->p : "", b->n);
  return 1;
}

static int b_tostring(lua_State *L) {
  bytes *b = (bytes *)luaL_checkudata(L, 1, BYTES_MT);
  if (b->freed) lua_pushliteral(L, "otskit.bytes (freed)");
  else lua_pushfstring(L, "otskit.bytes (%d bytes)", (int)b->n);
  return 1;
}

static const luaL_Reg methods[] = {{"string", b_string}, {"free", b_free}, {NULL, NULL}};
static const luaL_Reg metamethods[] = {
  {"__len", b_len}, {"__tostring", b_tostring}, {"__gc", b_free}, {"__close", b_free}, {NULL, NULL}};

static void raw_free(void *p, size_t n) {
  (void)n;
  free(p);
}

/* lua_newuserdata may raise: p is held by a box meanwhile */
void otsk_pushbytes(lua_State *L, char *p, size_t n, size_t cap, otsk_recycler *r) {
  otsk_box *box = otsk_box_new(L);
  box->p = p;
  box->n = cap;
  box->free = raw_free;
  bytes *b = (bytes *)lua_newuserdata(L, sizeof *b);
  b->p = NULL;
  b->r = NULL;
  b->n = b->cap = 0;
  b->freed = 1;
  luaL_getmetatable(L, BYTES_MT);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    otsk_newclass(L, BYTES_MT, methods, metamethods);
    luaL_getmetatable(L, BYTES_MT);
  }
  lua_setmetatable(L, -2);
  b->p = p;
  b->n = n;
  b->cap = cap;
  b->freed = 0;
  if (r) {
    r->refs++;
    b->r = r;
  }
  box->p = NULL;
  lua_remove(L, -2);
}

const char *otsk_checkbytes(lua_State *L, int idx, size_t *len) {
  if (lua_type(L, idx) == LUA_TSTRING) return lua_tolstring(L, idx, len);
  if (luaL_testudata(L, idx, BYTES_MT) == NULL) return luaL_checklstring(L, idx, len); /* raises */
  bytes *b = check(L, idx);
  *len = b->n;
  return b->p ? b->p : "";
}
