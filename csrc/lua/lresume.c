/* lresume.c -- Lua binding of resume.c: otskit.core.resume, the resume
 * tokens of merge.read (its `cursor` option; the kv scan cursor is
 * lkv.c's). Errors name "merge", the module users call. */
#include <string.h>

#include "compat.h"
#include "laux.h"
#include "parts.h"
#include "resume.h"

static const unsigned char *opt_secret(lua_State *L, int idx, size_t *n) {
  const char *s;
  if (lua_isnoneornil(L, idx)) return NULL;
  s = luaL_checklstring(L, idx, n);
  if (*n < RESUME_MIN_SECRET) otsk_error(L, "merge", "secret must be at least %d bytes", RESUME_MIN_SECRET);
  return (const unsigned char *)s;
}

/* encode(k, src, desc, dedup, typed, key, secret) -> text | nil,msg,code
 * key: a string (byte keys) or an array of integers/strings (typed). */
static int l_encode(lua_State *L) {
  resume_token *c;
  char *out;
  const char *why = NULL;
  size_t sl = 0, n;
  const unsigned char *secret;
  int64_t k = otsk_checkint64(L, 1, "merge", "k"), src = otsk_checkint64(L, 2, "merge", "src");
  int typed = lua_toboolean(L, 5), i;
  secret = opt_secret(L, 7, &sl);
  if (k < 1 || k > 1024 || src < 1 || src > k) return otsk_error(L, "merge", "cursor source out of range");
  c = (resume_token *)lua_newuserdata(L, sizeof *c + RESUME_MAX_TEXT); /* scratch, collected */
  memset(c, 0, sizeof *c);
  out = (char *)(c + 1);
  c->k = (unsigned)k;
  c->src = (unsigned)(src - 1);
  c->flags = (lua_toboolean(L, 3) ? RESUME_F_DESC : 0) | (lua_toboolean(L, 4) ? RESUME_F_DEDUP : 0) |
             (typed ? RESUME_F_TYPED : 0);
  if (!typed) {
    c->nparts = 1;
    c->part[0].s = (const unsigned char *)luaL_checklstring(L, 6, &c->part[0].n);
  } else {
    luaL_checktype(L, 6, LUA_TTABLE);
    c->nparts = (int)lua_rawlen(L, 6);
    if (c->nparts < 1 || c->nparts > RESUME_MAX_PARTS) return otsk_error(L, "merge", "bad cursor key");
    for (i = 0; i < c->nparts; i++) {
      lua_rawgeti(L, 6, i + 1);
      if (lua_type(L, -1) == LUA_TSTRING) {
        c->part[i].s = (const unsigned char *)lua_tolstring(L, -1, &c->part[i].n);
      } else {
        c->part[i].is_int = 1;
        c->part[i].i = otsk_checkint64(L, -1, "merge", "cursor key part");
      }
      lua_pop(L, 1); /* the string stays alive in the key table */
    }
  }
  n = resume_encode(c, secret, sl, out, &why);
  if (n == 0) return otsk_fail(L, "KeyTooLong", "otskit.merge: %s", why);
  lua_pushlstring(L, out, n);
  return 1;
}

/* decode(text, secret) -> {k, src, desc, dedup, typed, key} | nil,msg,"BadCursor" */
static int l_decode(lua_State *L) {
  size_t n, sl = 0;
  const char *text, *why = NULL;
  const unsigned char *secret;
  resume_token *c;
  int i;
  if (lua_type(L, 1) != LUA_TSTRING) return otsk_fail(L, "BadCursor", "otskit.merge: cursor must be a string");
  text = lua_tolstring(L, 1, &n);
  secret = opt_secret(L, 2, &sl);
  c = (resume_token *)lua_newuserdata(L, sizeof *c);
  if (resume_decode(text, n, secret, sl, c, &why) != 0)
    return otsk_fail(L, "BadCursor", "otskit.merge: bad cursor (%s)", why);
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, (lua_Integer)c->k);
  lua_setfield(L, -2, "k");
  lua_pushinteger(L, (lua_Integer)c->src + 1);
  lua_setfield(L, -2, "src");
  lua_pushboolean(L, c->flags & RESUME_F_DESC);
  lua_setfield(L, -2, "desc");
  lua_pushboolean(L, c->flags & RESUME_F_DEDUP);
  lua_setfield(L, -2, "dedup");
  lua_pushboolean(L, c->flags & RESUME_F_TYPED);
  lua_setfield(L, -2, "typed");
  if (c->flags & RESUME_F_TYPED) {
    lua_createtable(L, c->nparts, 0);
    for (i = 0; i < c->nparts; i++) {
      if (c->part[i].is_int) otsk_pushint64(L, c->part[i].i);
      else lua_pushlstring(L, (const char *)c->part[i].s, c->part[i].n);
      lua_rawseti(L, -2, i + 1);
    }
  } else {
    lua_pushlstring(L, (const char *)c->part[0].s, c->part[0].n);
  }
  lua_setfield(L, -2, "key");
  return 1;
}

static const luaL_Reg funcs[] = {
  {"encode", l_encode}, {"decode", l_decode}, {NULL, NULL}
};

int otsk_open_resume(lua_State *L) {
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  return 1;
}
