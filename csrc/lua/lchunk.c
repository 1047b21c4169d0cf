/* lchunk.c -- Lua binding of chunk.c: otskit.core.chunk. Manifests and
 * chunks are parsed in C; the streaming splitter and joiner are userdata
 * (__gc, __close, :close()). */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "chunk.h"
#include "compat.h"
#include "frame.h" /* otsk_xxh3_*: dispatched XXH3 */
#include "laux.h"
#include "parts.h"

#define SPLITTER_T "otskit.chunk.splitter"
#define JOINER_T "otskit.chunk.joiner"

/* Decimal text of v in b (24 bytes): lua_pushfstring has no 64-bit format
 * on LuaJIT. */
static const char *num(char *b, uint64_t v) {
  snprintf(b, 24, "%llu", (unsigned long long)v);
  return b;
}

static const char *const layout_names[] = {"columns", "rows", NULL};

static void push_hex(lua_State *L, const unsigned char *p, size_t n) {
  static const char hx[] = "0123456789abcdef";
  char out[64];
  size_t i;
  for (i = 0; i < n; i++) {
    out[2 * i] = hx[p[i] >> 4];
    out[2 * i + 1] = hx[p[i] & 15];
  }
  lua_pushlstring(L, out, 2 * n);
}

static int fail(lua_State *L, chunk_err e, const char *what) {
  const char *why;
  switch (e) {
  case CHUNK_EMANIFEST: why = "manifest is corrupt or inconsistent"; break;
  case CHUNK_EMTRUNC: why = "manifest is truncated"; break;
  case CHUNK_EVERSION: why = "record version is not supported"; break;
  case CHUNK_ECORRUPT: why = "chunk is corrupt"; break;
  case CHUNK_ETRUNCATED: why = "chunk is truncated"; break;
  case CHUNK_ESTALE: why = "chunk belongs to another write (stale generation)"; break;
  case CHUNK_EMISSING: why = "chunk is missing"; break;
  case CHUNK_EDUPLICATE: why = "chunk index given twice"; break;
  case CHUNK_EDIGEST: why = "joined value does not match the manifest digest"; break;
  default: why = "error"; break;
  }
  return otsk_fail(L, chunk_errcode(e), "%s%s", what, why);
}

/* Reads the manifest at idx; on failure pushes the triple and returns 0. */
static int get_manifest(lua_State *L, int idx, manifest *m) {
  size_t n;
  const char *p;
  chunk_err e;
  if (lua_type(L, idx) != LUA_TSTRING)
    otsk_error(L, "blob", "manifest must be a string (got %s)", luaL_typename(L, idx));
  p = lua_tolstring(L, idx, &n);
  e = manifest_decode(p, n, m);
  if (e != CHUNK_OK) { fail(L, e, ""); return 0; }
  return 1;
}

static void get_gen(lua_State *L, int idx, unsigned char gen[CHUNK_GEN_SIZE]) {
  size_t n;
  const char *g;
  if (lua_isnoneornil(L, idx)) {
    if (chunk_new_generation(gen) != 0) otsk_error(L, "blob", "no randomness for a generation id");
    return;
  }
  g = luaL_checklstring(L, idx, &n);
  if (n != CHUNK_GEN_SIZE) otsk_error(L, "blob", "generation must be 16 bytes");
  memcpy(gen, g, CHUNK_GEN_SIZE);
}

static uint32_t get_chunk_size(lua_State *L, int idx) {
  int64_t cs = otsk_checkint64(L, idx, "blob", "chunk_size");
  if (cs < 1 || cs > (int64_t)CHUNK_MAX_SIZE)
    otsk_error(L, "blob", "chunk_size must be 1..%d", (int)CHUNK_MAX_SIZE);
  return (uint32_t)cs;
}

static void push_manifest(lua_State *L, const manifest *m) {
  unsigned char out[MANIFEST_SIZE];
  manifest_encode(m, out);
  lua_pushlstring(L, (const char *)out, MANIFEST_SIZE);
}

/* Pushes chunk index of m from data[0..len), using buf (header + len) and
 * the state cst, adding the data to digest unless it is NULL. */
static void push_chunk(lua_State *L, const manifest *m, uint32_t index,
                       const unsigned char *data, uint32_t len, unsigned char *buf,
                       XXH3_state_t *cst, XXH3_state_t *digest) {
  chunk_build(m, index, data, len, buf, cst, digest);
  lua_pushlstring(L, (const char *)buf, CHUNK_HEADER_SIZE + (size_t)len);
}

/* manifest_info(m) -> {generation, length, chunk_size, count, layout, digest} */
static int l_manifest_info(lua_State *L) {
  manifest m;
  if (!get_manifest(L, 1, &m)) return 3;
  lua_createtable(L, 0, 6);
  push_hex(L, m.gen, CHUNK_GEN_SIZE);
  lua_setfield(L, -2, "generation");
  otsk_pushint64(L, (int64_t)m.length);
  lua_setfield(L, -2, "length");
  otsk_pushint64(L, (int64_t)m.chunk_size);
  lua_setfield(L, -2, "chunk_size");
  otsk_pushint64(L, (int64_t)m.count);
  lua_setfield(L, -2, "count");
  lua_pushstring(L, layout_names[m.layout]);
  lua_setfield(L, -2, "layout");
  push_hex(L, m.digest, 16);
  lua_setfield(L, -2, "digest");
  return 1;
}

static int too_large(lua_State *L, const manifest *m, int64_t max) {
  char nb[24];
  if ((int64_t)m->length < 0 || (int64_t)m->length > max) {
    otsk_fail(L, "TooLarge", "manifest claims %s bytes, over max_size", num(nb, m->length));
    return 1;
  }
  return 0;
}

/* nil, msg, code for a failed join: which is the chunk given (0-based) or,
 * for MissingChunk, the missing index; n the chunks given */
static int join_error(lua_State *L, const manifest *m, chunk_err e, size_t which, size_t n) {
  char nb[24], nb2[24];
  if (e == CHUNK_EDIGEST) return fail(L, e, "");
  lua_pushfstring(L, e == CHUNK_EMISSING ? "index %s of %s: " : "chunk #%s of %s given: ",
                  num(nb, (uint64_t)which + (e != CHUNK_EMISSING)),
                  num(nb2, e == CHUNK_EMISSING ? (uint64_t)m->count : (uint64_t)n));
  return fail(L, e, lua_tostring(L, -1));
}

/* join(manifest, chunks, max_size) -> value | nil, msg, code */
static int l_join(lua_State *L) {
  manifest m;
  int64_t max = otsk_checkint64(L, 3, "blob", "max_size");
  size_t n, i, which = 0;
  const void **ptrs;
  size_t *lens;
  unsigned char *out;
  otsk_box *box;
  chunk_err e;
  luaL_checktype(L, 2, LUA_TTABLE);
  if (!get_manifest(L, 1, &m)) return 3;
  if (too_large(L, &m, max)) return 3;
  n = (size_t)lua_rawlen(L, 2);
  {
    uint64_t have = 0; /* the data the chunks can hold: memory follows it, not the claim */
    char nb[24], nb2[24];
    for (i = 1; i <= n; i++) {
      lua_rawgeti(L, 2, (int)i);
      if (lua_type(L, -1) != LUA_TSTRING)
        otsk_error(L, "blob", "chunk %d is a %s, not a string", (int)i, luaL_typename(L, -1));
      have += (uint64_t)lua_rawlen(L, -1);
      lua_pop(L, 1);
    }
    if (m.length > have) {
      /* cannot be whole: name the first bad chunk as join would, else
       * what is missing, without allocating the claimed length */
      for (i = 0; i < n; i++) {
        const unsigned char *data;
        size_t cl, dl;
        uint32_t idx;
        const char *p;
        lua_rawgeti(L, 2, (int)i + 1);
        p = lua_tolstring(L, -1, &cl);
        e = chunk_decode(&m, p, cl, &idx, &data, &dl);
        lua_pop(L, 1);
        if (e != CHUNK_OK) return join_error(L, &m, e, i, n);
      }
      return otsk_fail(L, "MissingChunk", "the chunks given hold at most %s bytes, the manifest claims %s",
                       num(nb, have), num(nb2, m.length));
    }
  }
  /* owned by the GC while strings are read and the value is pushed */
  ptrs = (const void **)lua_newuserdata(L, (n + 1) * (sizeof *ptrs + sizeof *lens));
  lens = (size_t *)(ptrs + n + 1);
  box = otsk_box_new(L);
  box->p = chunk_buf_alloc((size_t)m.length);
  box->n = (size_t)m.length;
  box->free = chunk_buf_free;
  if (!box->p) {
    char nb[24];
    return otsk_fail(L, "TooLarge", "cannot allocate %s bytes for the value", num(nb, m.length));
  }
  out = (unsigned char *)box->p;
  for (i = 0; i < n; i++) { /* strings stay alive: the table holds them */
    lua_rawgeti(L, 2, (int)i + 1);
    ptrs[i] = lua_tolstring(L, -1, &lens[i]);
    lua_pop(L, 1);
  }
  e = chunk_join(&m, ptrs, lens, n, out, &which);
  if (e == CHUNK_OK) lua_pushlstring(L, (const char *)out, (size_t)m.length);
  otsk_box_release(box);
  if (e == CHUNK_OK) return 1;
  return join_error(L, &m, e, which, n);
}

/* chunk_data(manifest, chunk, index) -> data of that chunk | nil, msg, code */
static int l_chunk_data(lua_State *L) {
  char nb[24], nb2[24];
  manifest m;
  size_t n, len;
  const char *p;
  int64_t want = otsk_checkint64(L, 3, "blob", "index");
  uint32_t idx;
  const unsigned char *data;
  chunk_err e;
  if (!get_manifest(L, 1, &m)) return 3;
  if (lua_isnil(L, 2)) return otsk_fail(L, "MissingChunk", "chunk %s is missing", num(nb, (uint64_t)want));
  p = luaL_checklstring(L, 2, &n);
  e = chunk_decode(&m, p, n, &idx, &data, &len);
  if (e != CHUNK_OK) return fail(L, e, "");
  if ((int64_t)idx != want)
    return otsk_fail(L, "MissingChunk", "wanted chunk %s, got chunk %s", num(nb, (uint64_t)want),
                     num(nb2, idx));
  lua_pushlstring(L, (const char *)data, len);
  return 1;
}

/* new_generation() -> 16 random bytes */
static int l_new_generation(lua_State *L) {
  unsigned char g[CHUNK_GEN_SIZE];
  get_gen(L, 1, g);
  lua_pushlstring(L, (const char *)g, CHUNK_GEN_SIZE);
  return 1;
}

/* ---- streaming splitter: memory = one chunk buffer ------------------ */

typedef struct {
  manifest m;
  XXH3_state_t *st, *cst; /* whole-value digest; chunk checks */
  unsigned char *buf; /* header + chunk_size */
  size_t fill;
  uint32_t index;
  int done;
} splitter;

static splitter *check_splitter(lua_State *L) {
  splitter *s = luaL_checkudata(L, 1, SPLITTER_T);
  if (!s->buf) otsk_error(L, "blob", "splitter is closed");
  if (s->done) otsk_error(L, "blob", "splitter is finished");
  return s;
}

static void splitter_release(splitter *s) {
  if (s->st) XXH3_freeState(s->st);
  if (s->cst) XXH3_freeState(s->cst);
  free(s->buf);
  s->st = NULL;
  s->cst = NULL;
  s->buf = NULL;
}

static int l_splitter_close(lua_State *L) {
  splitter_release(luaL_checkudata(L, 1, SPLITTER_T));
  return 0;
}

/* Pushes a splitter userdata (its __gc frees its buffers): chunk size
 * cs, the layout and generation at args layout_idx and gen_idx. */
static splitter *push_splitter(lua_State *L, uint32_t cs, int layout_idx, int gen_idx) {
  int layout = luaL_checkoption(L, layout_idx, NULL, layout_names);
  splitter *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, SPLITTER_T);
  get_gen(L, gen_idx, s->m.gen);
  s->m.chunk_size = cs;
  s->m.layout = (chunk_layout)layout;
  s->st = XXH3_createState();
  s->cst = XXH3_createState();
  s->buf = malloc(CHUNK_HEADER_SIZE + (size_t)cs);
  if (!s->st || !s->cst || !s->buf || XXH3_128bits_reset(s->st) != XXH_OK)
    otsk_error(L, "blob", "out of memory");
  return s;
}

/* splitter(chunk_size, layout, gen|nil) -> splitter */
static int l_splitter_new(lua_State *L) {
  push_splitter(L, get_chunk_size(L, 1), 2, 3);
  return 1;
}

/* split(value, chunk_size, layout, gen|nil) -> manifest, {chunk, ...}: a
 * splitter owns the buffers while chunks are pushed (which may raise). */
static int l_split(lua_State *L) {
  size_t n;
  const unsigned char *p = (const unsigned char *)luaL_checklstring(L, 1, &n);
  splitter *s = push_splitter(L, get_chunk_size(L, 2), 3, 4);
  manifest *m = &s->m;
  uint32_t i;
  if ((uint64_t)n / m->chunk_size >= 0xffffffffu) otsk_error(L, "blob", "too many chunks");
  m->length = n;
  m->count = chunk_count(n, m->chunk_size);
  lua_createtable(L, (int)m->count, 0);
  for (i = 0; i < m->count; i++) { /* copied, checked and digested in one pass */
    const unsigned char *d = p + (size_t)i * m->chunk_size;
    push_chunk(L, m, i, d, chunk_len(m, i), s->buf, s->cst, s->st);
    lua_rawseti(L, -2, (int)i + 1);
  }
  chunk_digest_final(s->st, m->digest);
  push_manifest(L, m);
  splitter_release(s); /* now, not at the next collection */
  lua_insert(L, -2);
  return 2;
}

static void emit(lua_State *L, splitter *s) {
  if (s->index == 0xffffffffu) otsk_error(L, "blob", "too many chunks");
  push_chunk(L, &s->m, s->index, s->buf + CHUNK_HEADER_SIZE, (uint32_t)s->fill, s->buf, s->cst, NULL);
  s->m.length += s->fill;
  s->index++;
  s->fill = 0;
}

/* s:feed(piece, offset) -> chunk | nil, next offset: takes bytes of piece
 * from offset (1-based) until a chunk is full or the piece ends. */
static int l_splitter_feed(lua_State *L) {
  splitter *s = check_splitter(L);
  size_t n, take;
  const char *p = luaL_checklstring(L, 2, &n);
  int64_t off = otsk_checkint64(L, 3, "blob", "offset");
  if (off < 1 || (uint64_t)off > (uint64_t)n + 1) otsk_error(L, "blob", "offset out of range");
  take = n - (size_t)(off - 1);
  if (take > s->m.chunk_size - s->fill) take = s->m.chunk_size - s->fill;
  memcpy(s->buf + CHUNK_HEADER_SIZE + s->fill, p + off - 1, take);
  otsk_xxh3_128_update(s->st, p + off - 1, take);
  s->fill += take;
  if (s->fill == s->m.chunk_size) emit(L, s);
  else lua_pushnil(L);
  otsk_pushint64(L, (int64_t)(off + (int64_t)take));
  return 2;
}

/* s:finish() -> last chunk | nil, manifest */
static int l_splitter_finish(lua_State *L) {
  splitter *s = check_splitter(L);
  if (s->fill > 0) emit(L, s);
  else lua_pushnil(L);
  s->m.count = s->index;
  chunk_digest_final(s->st, s->m.digest);
  s->done = 1;
  push_manifest(L, &s->m);
  return 2;
}

/* ---- streaming joiner: chunks in index order, no buffer ------------- */

typedef struct {
  manifest m;
  XXH3_state_t *st;
  uint32_t next;
} joiner;

static joiner *check_joiner(lua_State *L) {
  joiner *j = luaL_checkudata(L, 1, JOINER_T);
  if (!j->st) otsk_error(L, "blob", "joiner is closed");
  return j;
}

static int l_joiner_close(lua_State *L) {
  joiner *j = luaL_checkudata(L, 1, JOINER_T);
  if (j->st) XXH3_freeState(j->st);
  j->st = NULL;
  return 0;
}

/* joiner(manifest, max_size) -> joiner | nil, msg, code */
static int l_joiner_new(lua_State *L) {
  manifest m;
  int64_t max = otsk_checkint64(L, 2, "blob", "max_size");
  joiner *j;
  if (!get_manifest(L, 1, &m)) return 3;
  if (too_large(L, &m, max)) return 3;
  j = lua_newuserdatauv(L, sizeof *j, 0);
  memset(j, 0, sizeof *j);
  luaL_setmetatable(L, JOINER_T);
  j->m = m;
  j->st = XXH3_createState();
  if (!j->st || XXH3_128bits_reset(j->st) != XXH_OK) return otsk_error(L, "blob", "out of memory");
  return 1;
}

/* j:feed(chunk) -> its data | nil, msg, code; chunks must come in order */
static int l_joiner_feed(lua_State *L) {
  joiner *j = check_joiner(L);
  size_t n, len;
  const char *p = luaL_checklstring(L, 2, &n);
  uint32_t idx;
  const unsigned char *data;
  chunk_err e = chunk_decode(&j->m, p, n, &idx, &data, &len);
  char nb[24], nb2[24];
  if (e != CHUNK_OK) {
    lua_pushfstring(L, "chunk %s: ", num(nb, j->next));
    return fail(L, e, lua_tostring(L, -1));
  }
  if (idx < j->next)
    return otsk_fail(L, "DuplicateChunk", "chunk %s given again (next is %s)", num(nb, idx), num(nb2, j->next));
  if (idx > j->next)
    return otsk_fail(L, "MissingChunk", "chunk %s is missing (got %s)", num(nb, j->next), num(nb2, idx));
  otsk_xxh3_128_update(j->st, data, len);
  j->next++;
  lua_pushlstring(L, (const char *)data, len);
  return 1;
}

/* j:finish() -> true | nil, msg, code (missing chunks, digest) */
static int l_joiner_finish(lua_State *L) {
  joiner *j = check_joiner(L);
  unsigned char d[16];
  char nb[24], nb2[24];
  if (j->next < j->m.count)
    return otsk_fail(L, "MissingChunk", "chunk %s of %s is missing", num(nb, j->next), num(nb2, j->m.count));
  chunk_digest_final(j->st, d);
  if (memcmp(d, j->m.digest, 16) != 0) return fail(L, CHUNK_EDIGEST, "");
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg funcs[] = {
  {"split", l_split},
  {"join", l_join},
  {"manifest_info", l_manifest_info},
  {"chunk_data", l_chunk_data},
  {"new_generation", l_new_generation},
  {"splitter", l_splitter_new},
  {"joiner", l_joiner_new},
  {NULL, NULL}
};

static const luaL_Reg splitter_methods[] = {
  {"feed", l_splitter_feed}, {"finish", l_splitter_finish}, {"close", l_splitter_close},
  {NULL, NULL}
};
static const luaL_Reg splitter_meta[] = {
  OTSK_CLOSE_META(l_splitter_close), {NULL, NULL}
};
static const luaL_Reg joiner_methods[] = {
  {"feed", l_joiner_feed}, {"finish", l_joiner_finish}, {"close", l_joiner_close},
  {NULL, NULL}
};
static const luaL_Reg joiner_meta[] = {
  OTSK_CLOSE_META(l_joiner_close), {NULL, NULL}
};

int otsk_open_chunk(lua_State *L) {
  otsk_newclass(L, SPLITTER_T, splitter_methods, splitter_meta);
  otsk_newclass(L, JOINER_T, joiner_methods, joiner_meta);
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  lua_pushinteger(L, CHUNK_HEADER_SIZE);
  lua_setfield(L, -2, "header_size");
  lua_pushinteger(L, MANIFEST_SIZE);
  lua_setfield(L, -2, "manifest_size");
  return 1;
}
