/* lsplice.c -- Lua binding of splice.c: compiled spliced-key encoders
 * (the userdata behind key.splice). Configuration is validated in
 * lua/otskit/key.lua; this file does the per-key work. */
#include <stdio.h>
#include <string.h>

#include "laux.h"
#include "lkey.h"
#include "splice.h"

#define MT_SPLICE "otskit.key.splice"
#define SPLICE_FIELDS_MAX 16
#define NAME_MAX_ 256
#define CHARSET_DESC_MAX 40

typedef struct lsplice {
  splice sp;
  splice_field f[SPLICE_FIELDS_MAX];
  char name[SPLICE_FIELDS_MAX][NAME_MAX_];
  char charset[SPLICE_FIELDS_MAX][CHARSET_DESC_MAX];
} lsplice;

/* self at index 1; methods carry the metatable as upvalue 1, which is
 * cheaper to compare than luaL_checkudata's registry lookup */
static lsplice *check_splice(lua_State *L) {
  void *p = lua_touserdata(L, 1);
  if (p == NULL || !lua_getmetatable(L, 1) || !lua_rawequal(L, -1, lua_upvalueindex(1)))
    otsk_error(L, "key", "bad self (expected %s; call with a colon)", MT_SPLICE);
  lua_pop(L, 1);
  return (lsplice *)p;
}

/* splice_new(sep, fields) -> encoder | nil, field index, offending byte.
 * fields: array of {name=, kind="int"|"string", width=, min=, charset=},
 * already validated by key.lua. */
static int l_splice_new(lua_State *L) {
  size_t seplen, n, i;
  const char *sep = luaL_checklstring(L, 1, &seplen);
  lsplice *self;
  unsigned char bad;
  int at;
  luaL_checktype(L, 2, LUA_TTABLE);
  n = (size_t)lua_rawlen(L, 2);
  if (seplen != 1) return otsk_error(L, "key", "sep must be one byte");
  if (n < 1 || n > SPLICE_FIELDS_MAX)
    return otsk_error(L, "key", "a splice has 1..%d fields", SPLICE_FIELDS_MAX);
  self = (lsplice *)lua_newuserdatauv(L, sizeof *self, 0);
  memset(self, 0, sizeof *self);
  luaL_getmetatable(L, MT_SPLICE);
  lua_setmetatable(L, -2);
  self->sp.sep = (unsigned char)sep[0];
  self->sp.nfields = (int)n;
  self->sp.fields = self->f;
  for (i = 0; i < n; i++) {
    splice_field *f = &self->f[i];
    const char *s;
    size_t sl;
    lua_rawgeti(L, 2, (int)i + 1);
    lua_getfield(L, -1, "name");
    s = luaL_checklstring(L, -1, &sl);
    if (sl >= NAME_MAX_) sl = NAME_MAX_ - 1;
    memcpy(self->name[i], s, sl);
    lua_pop(L, 1);
    lua_getfield(L, -1, "kind");
    if (strcmp(luaL_checkstring(L, -1), "int") == 0) {
      f->kind = SPLICE_INT;
      f->width = (int)otsk_optintfield(L, -2, "width", 0, 1, SPLICE_WIDTH_MAX, "key");
      f->min = otsk_optintfield(L, -2, "min", 0, INT64_MIN, INT64_MAX, "key");
    } else {
      f->kind = SPLICE_STRING;
      lua_getfield(L, -2, "charset");
      s = luaL_checklstring(L, -1, &sl);
      if (splice_set_charset(f, s, sl) != 0)
        return otsk_error(L, "key", "field '%s': charset is empty", self->name[i]);
      if (sl >= CHARSET_DESC_MAX) sl = CHARSET_DESC_MAX - 1;
      memcpy(self->charset[i], s, sl);
      lua_pop(L, 1);
    }
    lua_pop(L, 2);
  }
  at = splice_check(&self->sp, &bad);
  if (at >= 0) {
    lua_pushnil(L);
    lua_pushinteger(L, at + 1);
    lua_pushlstring(L, (const char *)&bad, 1);
    return 3;
  }
  return 1;
}

/* Pushes the value of field i of the tuple at index t: t[i+1], or
 * t[name] when the tuple is keyed by field names. */
static void get_field(lua_State *L, const lsplice *self, int t, int i) {
  lua_rawgeti(L, t, i + 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_getfield(L, t, self->name[i]);
  }
}

/* The "tuple <k>: " prefix of a message (k > 0: from encode_many); only
 * formatted on failure, as snprintf costs as much as an encode. */
static const char *prefix_of(char *buf, int k) {
  buf[0] = '\0';
  if (k > 0) snprintf(buf, 32, "tuple %d: ", k);
  return buf;
}

/* Encodes the tuple at index t into *o. Returns 0, or 3 with the failure
 * triple pushed (prefix: "tuple <k>: " when k > 0). Raises on a value of
 * the wrong Lua type. */
static int encode_one(lua_State *L, const lsplice *self, int t, splice_out *o,
                      int k) {
  char pre[32];
  int i;
  if (!lua_istable(L, t))
    return otsk_error(L, "key", "%sexpected a tuple (table), got %s", prefix_of(pre, k),
                      luaL_typename(L, t));
  o->len = 0;
  for (i = 0; i < self->sp.nfields; i++) {
    const splice_field *f = &self->f[i];
    splice_err e;
    get_field(L, self, t, i);
    if (f->kind == SPLICE_INT) {
      int64_t v;
      const char *why = NULL;
      int ty = lua_type(L, -1);
      if (ty != LUA_TNUMBER && ty != LUA_TSTRING)
        return otsk_error(L, "key", "%sfield '%s': expected an integer, got %s",
                          prefix_of(pre, k), self->name[i], luaL_typename(L, -1));
      if (!otsk_toint64(L, -1, &v, &why)) {
        int wide = strstr(why, "range") != NULL;
        lua_pop(L, 1);
        return otsk_fail(L, wide ? "IntTooWide" : "NotInteger",
                         "%sfield '%s': %s", prefix_of(pre, k), self->name[i], why);
      }
      e = splice_put_int(&self->sp, i, v, o);
      if (e == SPLICE_ERR_WIDTH) {
        char msg[160];
        lua_pop(L, 1);
        snprintf(msg, sizeof msg, "%lld does not fit %d digits from min %lld",
                 (long long)v, f->width, (long long)f->min);
        return otsk_fail(L, "IntTooWide", "%sfield '%s': %s", prefix_of(pre, k),
                         self->name[i], msg);
      }
    } else {
      size_t n, bad = 0;
      const char *s;
      if (lua_type(L, -1) != LUA_TSTRING)
        return otsk_error(L, "key", "%sfield '%s': expected a string, got %s",
                          prefix_of(pre, k), self->name[i], luaL_typename(L, -1));
      s = lua_tolstring(L, -1, &n);
      e = splice_put_string(&self->sp, i, s, n, o, &bad);
      if (e == SPLICE_ERR_CHARSET) {
        char msg[96];
        unsigned char c = (unsigned char)s[bad];
        lua_pop(L, 1);
        /* pushfstring has no %02X */
        if (c >= 0x20 && c < 0x7F)
          snprintf(msg, sizeof msg, "'%c' (0x%02X)", c, c);
        else
          snprintf(msg, sizeof msg, "0x%02X", c);
        return otsk_fail(L, "OutOfCharset",
                         "%sfield '%s': byte %s at %d is outside charset '%s'",
                         prefix_of(pre, k), self->name[i], msg, (int)bad + 1, self->charset[i]);
      }
    }
    lua_pop(L, 1);
    if (e == SPLICE_ERR_TOOLONG)
      return otsk_fail(L, "KeyTooLong", "%skey longer than %d bytes", prefix_of(pre, k),
                       SPLICE_KEY_MAX);
  }
  return 0;
}

static int m_encode(lua_State *L) {
  const lsplice *self = check_splice(L);
  splice_out o;
  int r = encode_one(L, self, 2, &o, 0);
  if (r) return r;
  lua_pushlstring(L, o.buf, o.len);
  return 1;
}

static int m_encode_many(lua_State *L) {
  const lsplice *self = check_splice(L);
  splice_out o;
  int n, k;
  luaL_checktype(L, 2, LUA_TTABLE);
  n = (int)lua_rawlen(L, 2);
  lua_createtable(L, n, 0);
  for (k = 1; k <= n; k++) {
    int r;
    lua_rawgeti(L, 2, k);
    r = encode_one(L, self, lua_gettop(L), &o, k);
    if (r) return r;
    lua_pop(L, 1);
    lua_pushlstring(L, o.buf, o.len);
    lua_rawseti(L, -2, k);
  }
  return 1;
}

static int m_decode(lua_State *L) {
  const lsplice *self = check_splice(L);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  splice_part parts[SPLICE_FIELDS_MAX];
  const char *why = NULL;
  int i;
  if (splice_decode(&self->sp, s, n, parts, &why) != 0)
    return otsk_fail(L, "BadKey", "not a key of this splice: %s", why);
  lua_createtable(L, self->sp.nfields, 0);
  for (i = 0; i < self->sp.nfields; i++) {
    if (self->f[i].kind == SPLICE_INT) otsk_pushint64(L, parts[i].v);
    else lua_pushlstring(L, parts[i].p, parts[i].n);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* _ptr() -> the address of the compiled splice (otskit_ffi.h's
 * otskit_splice), for the FFI encoder; valid while the encoder lives. */
static int m_ptr(lua_State *L) {
  lsplice *self = check_splice(L);
  lua_pushlightuserdata(L, &self->sp);
  return 1;
}

static int m_tostring(lua_State *L) {
  const lsplice *self = check_splice(L);
  lua_pushfstring(L, "otskit.key.splice (%d fields, sep '%c')",
                  self->sp.nfields, (int)self->sp.sep);
  return 1;
}

void otsk_key_open_splice(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"encode", m_encode}, {"encode_many", m_encode_many}, {"decode", m_decode},
    {"_ptr", m_ptr}, {NULL, NULL}
  };
  static const luaL_Reg meta[] = {{"__tostring", m_tostring}, {NULL, NULL}};
  otsk_newclass_uv(L, MT_SPLICE, methods, meta);
  lua_pushcfunction(L, l_splice_new);
  lua_setfield(L, -2, "splice_new");
}
