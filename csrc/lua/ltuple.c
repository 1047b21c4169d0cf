/* ltuple.c -- Lua binding of tuple.c: pack / unpack and their descending
 * variants, the null sentinel, the text / int / double wrappers and first
 * (the first element of a packed key). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "laux.h"
#include "lkey.h"
#include "tuple.h"

#define MT_TEXT "otskit.key.text"
#define MT_INT "otskit.key.int"
#define MT_DOUBLE "otskit.key.double"

/* upvalues of pack/unpack */
#define UV_TEXT lua_upvalueindex(1)
#define UV_INT lua_upvalueindex(2)
#define UV_DOUBLE lua_upvalueindex(3)
#define UV_SCRATCH lua_upvalueindex(4)

/* Scratch buffers kept across calls (no malloc per key); the functions
 * using them call no Lua code, so calls cannot interleave. */
typedef struct scratch { tuple_buf b; } scratch;

#define SCRATCH_KEEP 65536  /* larger buffers are released after use */

static int scratch_gc(lua_State *L) {
  scratch *s = (scratch *)lua_touserdata(L, 1);
  tuple_buf_free(&s->b);                /* idempotent */
  return 0;
}

static void scratch_trim(scratch *s) {
  if (s->b.cap > SCRATCH_KEEP) tuple_buf_free(&s->b);
  s->b.len = 0;
}

/* Is the value at idx a table with the metatable at upvalue mt? */
static int has_mt(lua_State *L, int idx, int mt) {
  int r;
  if (!lua_getmetatable(L, idx)) return 0;
  r = lua_rawequal(L, -1, mt);
  lua_pop(L, 1);
  return r;
}

/* A number packs as an integer when it is one exactly (any Lua 5.4
 * integer; a float that is integral, within int64 and not -0.0), else as a
 * double: the same bytes on Lua 5.4 and LuaJIT. */
static int number_as_int(lua_State *L, int idx, int64_t *v) {
  lua_Number d;
#if !OTSKIT_LUA51
  if (lua_isinteger(L, idx)) { *v = (int64_t)lua_tointeger(L, idx); return 1; }
#endif
  d = lua_tonumber(L, idx);
  if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0
      && !(d == 0 && signbit(d))) {
    *v = (int64_t)d;
    return 1;
  }
  return 0;
}

/* Every NaN packs as the one quiet NaN 0x7FF8000000000000 (sorting after
 * +inf): LuaJIT keeps no NaN sign or payload, and 0/0 is -NaN on x86 Lua
 * 5.4, so only a canonical NaN gives the same bytes on both. */
static int put_double(tuple_buf *b, double d) {
  if (d != d) {
    uint64_t u = (uint64_t)0x7FF8 << 48;
    memcpy(&d, &u, 8);
  }
  return tuple_put_double(b, d);
}

/* Appends the element at idx (position pos in the tuple). Returns 0, -1
 * when out of memory, or 1 with *why set for an unsupported value. */
static int put_elem(lua_State *L, tuple_buf *b, int idx, int desc,
                    const char **why) {
  int64_t v;
  size_t n;
  const char *s;
  switch (lua_type(L, idx)) {
    case LUA_TSTRING:
      s = lua_tolstring(L, idx, &n);
      return tuple_put_bytes(b, s, n);
    case LUA_TNUMBER:
      if (number_as_int(L, idx, &v)) return tuple_put_int(b, v);
      return put_double(b, lua_tonumber(L, idx));
    case LUA_TBOOLEAN:
      return tuple_put_bool(b, lua_toboolean(L, idx));
    case LUA_TNIL:
      return desc ? tuple_put_nil_desc(b) : tuple_put_nil(b);
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL)
        return desc ? tuple_put_nil_desc(b) : tuple_put_nil(b);
      break;
    case LUA_TTABLE: {
      int r = -2;
      lua_rawgeti(L, idx, 1);
      if (has_mt(L, idx, UV_TEXT) && lua_type(L, -1) == LUA_TSTRING) {
        s = lua_tolstring(L, -1, &n);
        r = tuple_put_text(b, s, n);
      } else if (has_mt(L, idx, UV_INT)) {
        if (otsk_toint64(L, -1, &v, why)) r = tuple_put_int(b, v);
        else { lua_pop(L, 1); return 1; }
      } else if (has_mt(L, idx, UV_DOUBLE) && lua_type(L, -1) == LUA_TNUMBER) {
        r = put_double(b, lua_tonumber(L, -1));
      }
      lua_pop(L, 1);
      if (r != -2) return r;
      break;
    }
  }
  *why = "unsupported value (use a string, number, boolean, key.null, "
         "key.text, key.int or key.double)";
  return 1;
}

/* Elements one pack takes and one unpack returns at most: a 100 MB input
 * of one-byte nils would otherwise build a 100-million-entry table, and a
 * t.n of 1e9 would pack a gigabyte of nils. */
#define TUPLE_MAX_ELEMENTS 1000000

/* Encodes the tuple at index 1 into the scratch buffer; raises on a
 * programming mistake. */
static tuple_buf *encode(lua_State *L, int desc) {
  scratch *sc = (scratch *)lua_touserdata(L, UV_SCRATCH);
  lua_Integer n, i;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushliteral(L, "n");
  lua_rawget(L, 1);
  if (lua_type(L, -1) == LUA_TNUMBER) {
    lua_Number d = lua_tonumber(L, -1);
    if (!(d >= 0 && d <= TUPLE_MAX_ELEMENTS) || d != floor(d))
      otsk_error(L, "key", "tuple.n must be an integer 0..%d", TUPLE_MAX_ELEMENTS);
    n = (lua_Integer)d;
  } else if (!lua_isnil(L, -1)) {
    n = 0;
    otsk_error(L, "key", "tuple.n must be an integer 0..%d, got a %s", TUPLE_MAX_ELEMENTS, luaL_typename(L, -1));
  } else {
    n = (lua_Integer)lua_rawlen(L, 1);
  }
  lua_pop(L, 1);
  sc->b.len = 0;
  for (i = 1; i <= n; i++) {
    const char *why = NULL;
    int r;
    lua_rawgeti(L, 1, (int)i);
    r = put_elem(L, &sc->b, lua_gettop(L), desc, &why);
    lua_pop(L, 1);
    if (r < 0) { scratch_trim(sc); otsk_error(L, "key", "out of memory"); }
    if (r > 0) {
      scratch_trim(sc);
      otsk_error(L, "key", "tuple element %d: %s", (int)i, why);
    }
  }
  if (desc && tuple_finish_desc(&sc->b, 0)) {
    scratch_trim(sc);
    otsk_error(L, "key", "out of memory");
  }
  return &sc->b;
}

static int l_pack(lua_State *L) {
  tuple_buf *b = encode(L, 0);
  lua_pushlstring(L, (const char *)b->p, b->len);
  scratch_trim((scratch *)lua_touserdata(L, UV_SCRATCH));
  return 1;
}

static int l_pack_desc(lua_State *L) {
  tuple_buf *b = encode(L, 1);
  lua_pushlstring(L, (const char *)b->p, b->len);
  scratch_trim((scratch *)lua_touserdata(L, UV_SCRATCH));
  return 1;
}

/* Pushes {v} with the metatable at upvalue mt; v is on top, popped. */
static void wrap(lua_State *L, int mt) {
  lua_createtable(L, 1, 0);
  lua_insert(L, -2);
  lua_rawseti(L, -2, 1);
  lua_pushvalue(L, mt);
  lua_setmetatable(L, -2);
}

/* Pushes a decoded element; returns 0, or -1 when out of memory. */
static int push_item(lua_State *L, scratch *sc, const tuple_item *it) {
  switch (it->type) {
    case TUPLE_NIL: lua_pushlightuserdata(L, NULL); break;
    case TUPLE_BYTES:
    case TUPLE_TEXT:
      if (!it->inverted && it->len == it->rawlen) {
        lua_pushlstring(L, (const char *)it->raw, it->len);
      } else {
        if (it->len > sc->b.cap) {
          unsigned char *p = (unsigned char *)realloc(sc->b.p, it->len);
          if (p == NULL) return -1;
          sc->b.p = p;
          sc->b.cap = it->len;
        }
        tuple_item_copy(it, sc->b.p);
        lua_pushlstring(L, (const char *)sc->b.p, it->len);
      }
      if (it->type == TUPLE_TEXT) wrap(L, UV_TEXT);
      break;
    case TUPLE_INT:
#if OTSKIT_LUA51
      if (it->i < -9007199254740992LL || it->i > 9007199254740992LL) {
        otsk_pushint64(L, it->i);       /* decimal string, kept an int */
        wrap(L, UV_INT);
        break;
      }
#endif
      otsk_pushint64(L, it->i);
      break;
    case TUPLE_DOUBLE: {
      int64_t v;
      lua_pushnumber(L, (lua_Number)it->d);
      /* an integral double would re-pack as an integer: keep it a double */
      if (number_as_int(L, -1, &v)) wrap(L, UV_DOUBLE);
      break;
    }
    case TUPLE_BOOL: lua_pushboolean(L, it->b); break;
  }
  return 0;
}

static int decode(lua_State *L, int desc) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  scratch *sc = (scratch *)lua_touserdata(L, UV_SCRATCH);
  tuple_reader r;
  tuple_item it;
  int k = 0, rc;
  size_t start = 0;
  tuple_reader_init(&r, s, n, desc);
  lua_newtable(L);
  while (start = r.pos, (rc = tuple_read(&r, &it)) == 1) {
    if (k == TUPLE_MAX_ELEMENTS) { /* memory follows a bound, not the input's whim */
      scratch_trim(sc);
      return otsk_fail(L, "BadTuple", "bad tuple: more than %d elements", TUPLE_MAX_ELEMENTS);
    }
    if (push_item(L, sc, &it)) {
      scratch_trim(sc);
      return otsk_error(L, "key", "out of memory");
    }
    lua_rawseti(L, -2, ++k);
  }
  scratch_trim(sc);
  if (rc < 0)
    return otsk_fail(L, "BadTuple", "bad tuple: %s (element %d, at byte %d)",
                     r.err, k + 1, (int)start);
  return 1;
}

static int l_unpack(lua_State *L) { return decode(L, 0); }
static int l_unpack_desc(lua_State *L) { return decode(L, 1); }

/* text(s) -> a text-string element (packs as 0x02) */
static int l_text(lua_State *L) {
  luaL_checktype(L, 1, LUA_TSTRING);
  lua_settop(L, 1);
  wrap(L, UV_TEXT);
  return 1;
}

/* int(v) -> an integer element from a number or a decimal string; the
 * way to pack 64-bit integers on LuaJIT. Raises if v is not an int64. */
static int l_int(lua_State *L) {
  int64_t v = otsk_checkint64(L, 1, "key", "#1 to int");
  otsk_pushint64(L, v);
  wrap(L, UV_INT);
  return 1;
}

/* double(x) -> a double element, even when x is integral. */
static int l_double(lua_State *L) {
  luaL_checktype(L, 1, LUA_TNUMBER);
  lua_pushnumber(L, lua_tonumber(L, 1));  /* a float on 5.4 too */
  wrap(L, UV_DOUBLE);
  return 1;
}

/* __tostring of the wrappers: the value itself, exactly (an int in full
 * decimal, a double with 17 significant digits, text with its zeros) */
static int w_tostring(lua_State *L) {
  int64_t v;
  const char *why;
  char buf[40];
  lua_rawgeti(L, 1, 1);
  if (lua_type(L, -1) == LUA_TSTRING) return 1;
  if (lua_type(L, -1) != LUA_TNUMBER) return 0;
  if (otsk_toint64(L, -1, &v, &why))
    snprintf(buf, sizeof buf, "%lld", (long long)v);
  else
    snprintf(buf, sizeof buf, "%.17g", (double)lua_tonumber(L, -1));
  lua_pushstring(L, buf);
  return 1;
}

/* __eq: same wrapper type (Lua checks the metamethods) and equal values */
static int w_eq(lua_State *L) {
  lua_rawgeti(L, 1, 1);
  lua_rawgeti(L, 2, 1);
  if (lua_type(L, -1) == LUA_TSTRING && lua_type(L, -2) == LUA_TSTRING) {
    lua_pushboolean(L, lua_rawequal(L, -1, -2));
  } else if (lua_type(L, -1) == LUA_TNUMBER && lua_type(L, -2) == LUA_TNUMBER) {
    lua_pushboolean(L, lua_tonumber(L, -1) == lua_tonumber(L, -2));
  } else {                              /* int: number vs decimal string */
    int64_t a, b;
    const char *why;
    lua_pushboolean(L, otsk_toint64(L, -1, &a, &why) &&
                       otsk_toint64(L, -2, &b, &why) && a == b);
  }
  return 1;
}

static void new_mt(lua_State *L, const char *name) {
  luaL_newmetatable(L, name);
  lua_pushcfunction(L, w_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, w_eq);
  lua_setfield(L, -2, "__eq");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "__name");
}

/* first(key) -> the bytes of the first element of a packed tuple (the
 * encoded partition-key value of a row key) | nil, msg, "BadTuple" */
static int l_first(lua_State *L) {
  size_t n;
  const char *k = luaL_checklstring(L, 1, &n);
  tuple_reader r;
  tuple_item it;
  tuple_reader_init(&r, k, n, 0);
  if (tuple_read(&r, &it) != 1)
    return otsk_fail(L, "BadTuple", "no first tuple element: %s", r.err ? r.err : "empty");
  lua_pushlstring(L, k, r.pos);
  return 1;
}


void otsk_key_open_tuple(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"pack", l_pack}, {"pack_desc", l_pack_desc},
    {"unpack", l_unpack}, {"unpack_desc", l_unpack_desc},
    {"text", l_text}, {"int", l_int}, {"double", l_double},
    {"first", l_first}, {NULL, NULL}
  };
  const luaL_Reg *f;
  scratch *sc;
  int t = lua_gettop(L);
  new_mt(L, MT_TEXT);
  new_mt(L, MT_INT);
  new_mt(L, MT_DOUBLE);
  sc = (scratch *)lua_newuserdatauv(L, sizeof *sc, 0);
  tuple_buf_init(&sc->b);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, scratch_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  for (f = fns; f->name; f++) {
    lua_pushvalue(L, t + 1);
    lua_pushvalue(L, t + 2);
    lua_pushvalue(L, t + 3);
    lua_pushvalue(L, t + 4);
    lua_pushcclosure(L, f->func, 4);
    lua_setfield(L, t, f->name);
  }
  lua_settop(L, t);
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, t, "null");
}
