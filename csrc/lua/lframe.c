/* lframe.c -- Lua binding of frame.c: otskit.core.frame. Contexts and
 * dictionaries are userdata (__gc, __close, :close()). */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include "compat.h"
#include "frame.h"
#include "laux.h"
#include "parts.h"

#define CTX_T "otskit.frame.ctx"
#define DICT_T "otskit.frame.dict"
#define KEEP_SCRATCH ((size_t)8 << 20) /* scratch kept between calls */

typedef struct { frame_ctx *c; } lctx;
typedef struct { frame_dict *d; } ldict;

/* Decimal text of v in b (24 bytes): lua_pushfstring has no 64-bit format
 * on LuaJIT. */
static const char *num(char *b, uint64_t v) {
  snprintf(b, 24, "%llu", (unsigned long long)v);
  return b;
}

static const char *const codec_names[] = {"raw", "zstd", "lz4", "zlib", NULL};
static const char *const sum_names[] = {"xxh3", "xxh64", NULL};

static frame_ctx *check_ctx(lua_State *L, int idx) {
  lctx *u = luaL_checkudata(L, idx, CTX_T);
  if (!u->c) otsk_error(L, "blob", "context is closed");
  return u->c;
}

static frame_dict *check_dict(lua_State *L, int idx) {
  ldict *u = luaL_checkudata(L, idx, DICT_T);
  if (!u->d) otsk_error(L, "blob", "dictionary is closed");
  return u->d;
}

/* ctx_new() -> a fresh compression context */
static int l_ctx_new(lua_State *L) {
  lctx *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->c = NULL;
  luaL_setmetatable(L, CTX_T);
  u->c = frame_ctx_new();
  if (!u->c) return otsk_error(L, "blob", "out of memory");
  return 1;
}

static int l_ctx_close(lua_State *L) {
  lctx *u = luaL_checkudata(L, 1, CTX_T);
  frame_ctx_free(u->c);
  u->c = NULL;
  return 0;
}

/* dict_new(bytes) -> dictionary (zstd-format or raw content)
 *                 | nil, msg, "CorruptDictionary" */
static int l_dict_new(lua_State *L) {
  size_t n;
  const char *p = luaL_checklstring(L, 1, &n);
  ldict *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->d = NULL;
  luaL_setmetatable(L, DICT_T);
  if (n == 0) return otsk_error(L, "blob", "a dictionary needs at least one byte");
  u->d = frame_dict_new(p, n);
  if (!u->d) /* zstd refuses a dictionary with a zstd header and bad tables */
    return otsk_fail(L, "CorruptDictionary", "cannot load the dictionary (corrupt zstd dictionary?)");
  return 1;
}

static int l_dict_close(lua_State *L) {
  ldict *u = luaL_checkudata(L, 1, DICT_T);
  frame_dict_free(u->d);
  u->d = NULL;
  return 0;
}

static int l_dict_id(lua_State *L) {
  otsk_pushint64(L, (int64_t)frame_dict_id(check_dict(L, 1)));
  return 1;
}

static int l_dict_bytes(lua_State *L) {
  size_t n;
  const void *p = frame_dict_bytes(check_dict(L, 1), &n);
  lua_pushlstring(L, p, n);
  return 1;
}

/* train(samples, size) -> dictionary bytes | nil, msg, "TrainingFailed" */
static int l_train(lua_State *L) {
  size_t cap, total = 0, i, n, off = 0, len;
  unsigned char *buf;
  size_t *sizes;
  const char *why = "?";
  luaL_checktype(L, 1, LUA_TTABLE);
  int64_t size = otsk_checkint64(L, 2, "blob", "size");
  if (size < 1 || size > ((int64_t)1 << 30)) return otsk_error(L, "blob", "train size must be 1..2^30");
  cap = (size_t)size;
  n = (size_t)lua_rawlen(L, 1);
  if (n == 0) return otsk_error(L, "blob", "train needs samples");
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, (int)i);
    if (lua_type(L, -1) != LUA_TSTRING)
      return otsk_error(L, "blob", "sample %d is not a string", (int)i);
    total += lua_rawlen(L, -1);
    lua_pop(L, 1);
  }
  /* scratch owned by the GC: a raise below frees it */
  sizes = (size_t *)lua_newuserdata(L, n * sizeof *sizes + total + cap + 1);
  buf = (unsigned char *)(sizes + n);
  for (i = 1; i <= n; i++) {
    const char *s;
    lua_rawgeti(L, 1, (int)i);
    s = lua_tolstring(L, -1, &sizes[i - 1]);
    memcpy(buf + cap + off, s, sizes[i - 1]);
    off += sizes[i - 1];
    lua_pop(L, 1);
  }
  len = frame_dict_train(buf, cap, buf + cap, sizes, (unsigned)n, &why);
  if (len == 0) return otsk_fail(L, "TrainingFailed", "dictionary training failed: %s", why);
  lua_pushlstring(L, (const char *)buf, len);
  return 1;
}

/* pack(ctx, value, codec, level, auto, sum, dict|nil) -> frame | nil, msg, code */
static int l_pack(lua_State *L) {
  char nb[24];
  frame_ctx *c = check_ctx(L, 1);
  size_t n, cap, out;
  const char *src = luaL_checklstring(L, 2, &n);
  frame_opts o;
  frame_err e;
  unsigned char *dst;
  o.codec = (frame_codec)luaL_checkoption(L, 3, NULL, codec_names);
  o.level = (int)otsk_checkint64(L, 4, "blob", "level");
  o.auto_raw = lua_toboolean(L, 5);
  o.sum = (frame_sum)luaL_checkoption(L, 6, NULL, sum_names);
  o.dict = lua_isnoneornil(L, 7) ? NULL : check_dict(L, 7);
  if (n > FRAME_MAX_LEN)
    return otsk_fail(L, "TooLarge", "value of %s bytes is over the frame limit", num(nb, n));
  cap = frame_bound(o.codec, n);
  dst = frame_ctx_scratch(c, cap);
  if (!dst) return otsk_error(L, "blob", "out of memory");
  e = frame_pack(c, &o, src, n, dst, cap, &out);
  if (e != FRAME_OK) {
    frame_ctx_trim(c, KEEP_SCRATCH);
    return otsk_fail(L, frame_errcode(e), "%s compression failed", codec_names[o.codec]);
  }
  lua_pushlstring(L, (const char *)dst, out);
  frame_ctx_trim(c, KEEP_SCRATCH);
  return 1;
}

static int parse_fail(lua_State *L, frame_err e, const frame_info *in) {
  char nb[24];
  switch (e) {
  case FRAME_ETRUNCATED: return otsk_fail(L, "TruncatedFrame", "frame is truncated");
  case FRAME_EVERSION: return otsk_fail(L, "UnknownVersion", "frame version is not supported");
  case FRAME_ECODEC: return otsk_fail(L, "UnknownCodec", "frame names an unknown codec or checksum");
  case FRAME_ETOOLARGE:
    return otsk_fail(L, "TooLarge", "frame claims %s bytes, over max_size", num(nb, in->length));
  default: return otsk_fail(L, "CorruptFrame", "not an otskit frame, or its header is corrupt");
  }
}

/* The dictionary among arg idx (nil, a dictionary or an array of them)
 * whose id is id, or NULL. */
static const frame_dict *find_dict(lua_State *L, int idx, uint32_t id) {
  size_t i, n;
  const frame_dict *d = NULL;
  if (lua_isnoneornil(L, idx)) return NULL;
  if (lua_type(L, idx) != LUA_TTABLE) {
    d = check_dict(L, idx);
    return frame_dict_id(d) == id ? d : NULL;
  }
  n = (size_t)lua_rawlen(L, idx);
  for (i = 1; i <= n; i++) {
    const frame_dict *x;
    lua_rawgeti(L, idx, (int)i);
    x = check_dict(L, -1);
    lua_pop(L, 1);
    if (frame_dict_id(x) == id) d = x;
  }
  return d;
}

/* unpack(ctx, frame, max_size, dicts) -> value | nil, msg, code */
static int l_unpack(lua_State *L) {
  char nb[24];
  frame_ctx *c = check_ctx(L, 1);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  int64_t max = otsk_checkint64(L, 3, "blob", "max_size");
  const frame_dict *d = NULL;
  frame_info in;
  frame_err e = frame_parse(p, n, &in);
  unsigned char *dst;
  if (e != FRAME_OK) return parse_fail(L, e, &in);
  if ((int64_t)in.length > max) return parse_fail(L, FRAME_ETOOLARGE, &in);
  if (in.dict_id != 0) {
    d = find_dict(L, 4, in.dict_id);
    if (!d)
      return otsk_fail(L, "UnknownDictionary", "frame needs dictionary %s, not given",
                       num(nb, in.dict_id));
  }
  if (in.codec == FRAME_RAW) { /* the value is the payload: no scratch, one copy */
    if (frame_check_raw(&in, p) != FRAME_OK)
      return otsk_fail(L, "CorruptFrame", "raw frame is corrupt (payload or checksum)");
    lua_pushlstring(L, p + FRAME_HEADER_SIZE, in.length);
    return 1;
  }
  dst = frame_ctx_scratch(c, in.length);
  if (!dst) return otsk_error(L, "blob", "out of memory");
  e = frame_decode(c, &in, p, d, dst);
  if (e != FRAME_OK) {
    frame_ctx_trim(c, KEEP_SCRATCH);
    return otsk_fail(L, frame_errcode(e), "%s frame is corrupt (payload or checksum)",
                     codec_names[in.codec]);
  }
  lua_pushlstring(L, (const char *)dst, in.length);
  frame_ctx_trim(c, KEEP_SCRATCH);
  return 1;
}

/* info(frame) -> {codec, checksum, dict_id, length, payload_length} | nil, msg, code */
static int l_info(lua_State *L) {
  size_t n;
  const char *p = luaL_checklstring(L, 1, &n);
  frame_info in;
  frame_err e = frame_parse(p, n, &in);
  if (e != FRAME_OK) return parse_fail(L, e, &in);
  lua_createtable(L, 0, 5);
  lua_pushstring(L, codec_names[in.codec]);
  lua_setfield(L, -2, "codec");
  lua_pushstring(L, sum_names[in.sum]);
  lua_setfield(L, -2, "checksum");
  otsk_pushint64(L, (int64_t)in.dict_id);
  lua_setfield(L, -2, "dict_id");
  otsk_pushint64(L, (int64_t)in.length);
  lua_setfield(L, -2, "length");
  otsk_pushint64(L, (int64_t)in.payload_len);
  lua_setfield(L, -2, "payload_length");
  return 1;
}

static const luaL_Reg funcs[] = {
  {"ctx_new", l_ctx_new},
  {"dict_new", l_dict_new},
  {"train", l_train},
  {"pack", l_pack},
  {"unpack", l_unpack},
  {"info", l_info},
  {NULL, NULL}
};

static const luaL_Reg ctx_methods[] = {{"close", l_ctx_close}, {NULL, NULL}};
static const luaL_Reg ctx_meta[] = {
  OTSK_CLOSE_META(l_ctx_close), {NULL, NULL}
};
static const luaL_Reg dict_methods[] = {
  {"close", l_dict_close}, {"id", l_dict_id}, {"bytes", l_dict_bytes}, {NULL, NULL}
};
static const luaL_Reg dict_meta[] = {
  OTSK_CLOSE_META(l_dict_close), {NULL, NULL}
};

int otsk_open_frame(lua_State *L) {
  otsk_newclass(L, CTX_T, ctx_methods, ctx_meta);
  otsk_newclass(L, DICT_T, dict_methods, dict_meta);
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  lua_pushinteger(L, FRAME_HEADER_SIZE);
  lua_setfield(L, -2, "header_size");
  return 1;
}
