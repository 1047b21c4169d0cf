/* frame.c -- compression frames over libzstd, liblz4 and zlib, with
 * XXH3/XXH64 checksums from libxxhash. See frame.h for the format. */
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <xxhash.h>
#include <zdict.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "bytes.h"
#include "frame.h"

#define NCDICT 4 /* compression levels prepared per dictionary */

struct frame_ctx {
  ZSTD_CCtx *zc;
  ZSTD_DCtx *zd;
  void *lz4;           /* LZ4_sizeofState() bytes */
  z_stream def, inf;
  int def_level;       /* -1: deflate stream not initialised */
  int inf_ready;
  unsigned char *buf;
  size_t cap;
};

struct frame_dict {
  unsigned char *bytes;
  size_t len;
  uint32_t id;
  ZSTD_DDict *ddict;
  struct { int level; ZSTD_CDict *cdict; } c[NCDICT];
  int nc;
};

static const char magic[4] = {'O', 'T', 'K', 'F'};

const char *frame_errcode(frame_err e) {
  switch (e) {
  case FRAME_OK: return "OK";
  case FRAME_ETRUNCATED: return "TruncatedFrame";
  case FRAME_ECORRUPT: return "CorruptFrame";
  case FRAME_EVERSION: return "UnknownVersion";
  case FRAME_ECODEC: return "UnknownCodec";
  case FRAME_EDICT: return "UnknownDictionary";
  case FRAME_ETOOLARGE: return "TooLarge";
  case FRAME_ENOMEM: return "OutOfMemory";
  case FRAME_ELIB: return "CompressionFailed";
  }
  return "CorruptFrame";
}

const char *frame_codec_name(int codec) {
  static const char *const names[FRAME_NCODECS] = {"raw", "zstd", "lz4", "zlib"};
  return codec >= 0 && codec < FRAME_NCODECS ? names[codec] : NULL;
}

uint64_t frame_checksum(frame_sum sum, const void *p, size_t n) {
  return sum == FRAME_XXH64 ? (uint64_t)XXH64(p, n, 0) : (uint64_t)otsk_xxh3_64(p, n);
}

/* ---- context ---------------------------------------------------------- */

frame_ctx *frame_ctx_new(void) {
  frame_ctx *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->zc = ZSTD_createCCtx();
  c->zd = ZSTD_createDCtx();
  c->lz4 = malloc((size_t)LZ4_sizeofState());
  c->def_level = -1;
  if (!c->zc || !c->zd || !c->lz4) { frame_ctx_free(c); return NULL; }
  return c;
}

void frame_ctx_free(frame_ctx *c) {
  if (!c) return;
  ZSTD_freeCCtx(c->zc);
  ZSTD_freeDCtx(c->zd);
  free(c->lz4);
  if (c->def_level >= 0) deflateEnd(&c->def);
  if (c->inf_ready) inflateEnd(&c->inf);
  free(c->buf);
  free(c);
}

unsigned char *frame_ctx_scratch(frame_ctx *c, size_t n) {
  if (n > c->cap) {
    unsigned char *b = malloc(n ? n : 1);
    if (!b) return NULL;
    free(c->buf);
    c->buf = b;
    c->cap = n;
  }
  return c->buf;
}

void frame_ctx_trim(frame_ctx *c, size_t keep) {
  if (c->cap > keep) { free(c->buf); c->buf = NULL; c->cap = 0; }
}

/* ---- dictionaries ----------------------------------------------------- */

frame_dict *frame_dict_new(const void *p, size_t n) {
  frame_dict *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->bytes = malloc(n ? n : 1);
  if (!d->bytes) { free(d); return NULL; }
  memcpy(d->bytes, p, n);
  d->len = n;
  d->id = ZDICT_getDictID(p, n);
  if (d->id == 0) d->id = (uint32_t)XXH3_64bits(p, n) | 1u; /* raw content */
  d->ddict = ZSTD_createDDict(d->bytes, n);
  if (!d->ddict) { frame_dict_free(d); return NULL; }
  return d;
}

void frame_dict_free(frame_dict *d) {
  int i;
  if (!d) return;
  for (i = 0; i < d->nc; i++) ZSTD_freeCDict(d->c[i].cdict);
  ZSTD_freeDDict(d->ddict);
  free(d->bytes);
  free(d);
}

uint32_t frame_dict_id(const frame_dict *d) { return d->id; }

const void *frame_dict_bytes(const frame_dict *d, size_t *n) {
  *n = d->len;
  return d->bytes;
}

/* The CDict for level, made on first use (a few levels are kept). The
 * dictionary is logically const: the cache is an implementation detail. */
static ZSTD_CDict *dict_cdict(const frame_dict *cd, int level) {
  frame_dict *d = (frame_dict *)cd;
  ZSTD_CDict *cdict;
  int i;
  for (i = 0; i < d->nc; i++)
    if (d->c[i].level == level) return d->c[i].cdict;
  cdict = ZSTD_createCDict(d->bytes, d->len, level);
  if (!cdict) return NULL;
  if (d->nc == NCDICT) { /* evict the oldest */
    ZSTD_freeCDict(d->c[0].cdict);
    memmove(&d->c[0], &d->c[1], (NCDICT - 1) * sizeof d->c[0]);
    d->nc--;
  }
  d->c[d->nc].level = level;
  d->c[d->nc].cdict = cdict;
  d->nc++;
  return cdict;
}

size_t frame_dict_train(void *dst, size_t cap, const void *samples,
                        const size_t *sizes, unsigned nsamples, const char **why) {
  size_t r = ZDICT_trainFromBuffer(dst, cap, samples, sizes, nsamples);
  if (ZDICT_isError(r)) { *why = ZDICT_getErrorName(r); return 0; }
  return r;
}

/* ---- pack ------------------------------------------------------------- */

size_t frame_bound(frame_codec codec, size_t n) {
  size_t b = n;
  switch (codec) {
  case FRAME_ZSTD: b = ZSTD_compressBound(n); break;
  case FRAME_LZ4: b = n + n / 255 + 16; break;
  case FRAME_ZLIB: b = n + n / 1000 + (n >> 12) + (n >> 14) + (n >> 25) + 64; break;
  case FRAME_RAW: break;
  }
  if (b < n) b = n; /* never below raw: auto may fall back to it */
  return b + FRAME_HEADER_SIZE;
}

/* Compresses into dst[0..cap); returns the payload length, 0 when it did
 * not fit (auto: not worth it), or (size_t)-1 on a library failure. */
static size_t codec_compress(frame_ctx *c, const frame_opts *o, const void *src,
                       size_t n, unsigned char *dst, size_t cap) {
  size_t r;
  switch (o->codec) {
  case FRAME_ZSTD:
    if (o->dict) {
      ZSTD_CDict *cd = dict_cdict(o->dict, o->level);
      if (!cd) return (size_t)-1;
      r = ZSTD_compress_usingCDict(c->zc, dst, cap, src, n, cd);
    } else {
      r = ZSTD_compressCCtx(c->zc, dst, cap, src, n, o->level);
    }
    if (ZSTD_isError(r))
      return ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall ? 0 : (size_t)-1;
    return r;
  case FRAME_LZ4: {
    int k;
    if (n > (size_t)LZ4_MAX_INPUT_SIZE) return (size_t)-1;
    if (cap > (size_t)0x7fffffff) cap = 0x7fffffff;
    k = LZ4_compress_fast_extState(c->lz4, src, (char *)dst, (int)n, (int)cap,
                                   o->level < 1 ? 1 : o->level);
    return k > 0 ? (size_t)k : 0;
  }
  case FRAME_ZLIB: {
    int e;
    if (c->def_level != o->level) {
      if (c->def_level >= 0) deflateEnd(&c->def);
      c->def_level = -1;
      memset(&c->def, 0, sizeof c->def);
      if (deflateInit2(&c->def, o->level, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return (size_t)-1;
      c->def_level = o->level;
    } else if (deflateReset(&c->def) != Z_OK) {
      return (size_t)-1;
    }
    if (cap > 0xffffffffu) cap = 0xffffffffu;
    c->def.next_in = (Bytef *)(uintptr_t)src;
    c->def.avail_in = (uInt)n;
    c->def.next_out = dst;
    c->def.avail_out = (uInt)cap;
    e = deflate(&c->def, Z_FINISH);
    if (e == Z_STREAM_END) return (size_t)c->def.total_out;
    return e == Z_OK || e == Z_BUF_ERROR ? 0 : (size_t)-1;
  }
  case FRAME_RAW: break;
  }
  return 0;
}

frame_err frame_pack(frame_ctx *c, const frame_opts *o, const void *src,
                     size_t n, unsigned char *dst, size_t cap, size_t *out_len) {
  frame_codec codec = o->codec;
  size_t plen = 0;
  unsigned char *h = dst;
  uint32_t dict_id = 0;
  if (n > FRAME_MAX_LEN) return FRAME_ETOOLARGE;
  if (cap < frame_bound(codec, n)) return FRAME_ELIB;
  if (codec != FRAME_RAW) {
    /* auto: a payload must be strictly shorter than raw to be kept */
    size_t room = o->auto_raw ? n - (n > 0) : cap - FRAME_HEADER_SIZE;
    if (room > FRAME_MAX_LEN) room = FRAME_MAX_LEN;
    plen = (o->auto_raw && n == 0) ? 0 : codec_compress(c, o, src, n, dst + FRAME_HEADER_SIZE, room);
    if (plen == (size_t)-1) return FRAME_ELIB;
    if (plen == 0) {
      if (!o->auto_raw) return FRAME_ELIB;
      codec = FRAME_RAW;
    } else if (codec == FRAME_ZSTD && o->dict) {
      dict_id = frame_dict_id(o->dict);
    }
  }
  if (codec == FRAME_RAW) {
    memcpy(dst + FRAME_HEADER_SIZE, src, n);
    plen = n;
  }
  memcpy(h, magic, 4);
  h[4] = FRAME_VERSION;
  h[5] = (unsigned char)codec;
  h[6] = (unsigned char)o->sum;
  h[7] = 0;
  put_le32(h + 8, dict_id);
  put_le32(h + 12, (uint32_t)n);
  put_le32(h + 16, (uint32_t)plen);
  {
    uint64_t sum = frame_checksum(o->sum, src, n);
    put_le64(h + 20, sum);
    /* raw: the payload is the original; its XXH3 is already known */
    put_le32(h + 28, (uint32_t)(codec == FRAME_RAW && o->sum == FRAME_XXH3
                                    ? sum : otsk_xxh3_64(dst + FRAME_HEADER_SIZE, plen)));
  }
  put_le32(h + 32, (uint32_t)XXH3_64bits(h, 32));
  *out_len = FRAME_HEADER_SIZE + plen;
  return FRAME_OK;
}

/* ---- unpack ----------------------------------------------------------- */

frame_err frame_parse(const void *frame, size_t n, frame_info *info) {
  const unsigned char *p = frame;
  if (n < FRAME_HEADER_SIZE) /* a prefix of a frame, or not a frame at all */
    return memcmp(p, magic, n < 4 ? n : 4) == 0 ? FRAME_ETRUNCATED : FRAME_ECORRUPT;
  if (memcmp(p, magic, 4) != 0) return FRAME_ECORRUPT;
  if (get_le32(p + 32) != (uint32_t)XXH3_64bits(p, 32)) return FRAME_ECORRUPT;
  if (p[4] != FRAME_VERSION || p[7] != 0) return FRAME_EVERSION;
  if (p[5] >= FRAME_NCODECS || p[6] > FRAME_XXH64) return FRAME_ECODEC;
  info->codec = (frame_codec)p[5];
  info->sum = (frame_sum)p[6];
  info->dict_id = get_le32(p + 8);
  info->length = get_le32(p + 12);
  info->payload_len = get_le32(p + 16);
  info->checksum = get_le64(p + 20);
  if (info->dict_id != 0 && info->codec != FRAME_ZSTD) return FRAME_ECORRUPT;
  if (info->codec == FRAME_RAW && info->payload_len != info->length) return FRAME_ECORRUPT;
  if (n - FRAME_HEADER_SIZE < info->payload_len) return FRAME_ETRUNCATED;
  if (n - FRAME_HEADER_SIZE > info->payload_len) return FRAME_ECORRUPT;
  info->payload_hash = otsk_xxh3_64(p + FRAME_HEADER_SIZE, info->payload_len);
  if (get_le32(p + 28) != (uint32_t)info->payload_hash) return FRAME_ECORRUPT;
  return FRAME_OK;
}

/* Decompresses src into exactly len bytes at dst; 0 on success. */
static int codec_decompress(frame_ctx *c, const frame_info *in, const unsigned char *src,
                      const frame_dict *d, unsigned char *dst) {
  size_t len = in->length, plen = in->payload_len, r;
  switch (in->codec) {
  case FRAME_RAW:
    memcpy(dst, src, len);
    return 0;
  case FRAME_ZSTD:
    r = d ? ZSTD_decompress_usingDDict(c->zd, dst, len, src, plen, d->ddict)
          : ZSTD_decompressDCtx(c->zd, dst, len, src, plen);
    return ZSTD_isError(r) || r != len;
  case FRAME_LZ4:
    if (len > (size_t)0x7fffffff || plen > (size_t)0x7fffffff) return 1;
    return LZ4_decompress_safe((const char *)src, (char *)dst, (int)plen, (int)len) != (int)len;
  case FRAME_ZLIB: {
    int e;
    if (!c->inf_ready) {
      memset(&c->inf, 0, sizeof c->inf);
      if (inflateInit(&c->inf) != Z_OK) return 1;
      c->inf_ready = 1;
    } else if (inflateReset(&c->inf) != Z_OK) {
      return 1;
    }
    c->inf.next_in = (Bytef *)(uintptr_t)src;
    c->inf.avail_in = (uInt)plen;
    c->inf.next_out = dst;
    c->inf.avail_out = (uInt)len;
    e = inflate(&c->inf, Z_FINISH);
    return e != Z_STREAM_END || c->inf.avail_in != 0 || c->inf.total_out != len;
  }
  }
  return 1;
}

frame_err frame_decode(frame_ctx *c, const frame_info *info, const void *frame,
                       const frame_dict *dict, unsigned char *dst) {
  const unsigned char *src = (const unsigned char *)frame + FRAME_HEADER_SIZE;
  if (info->dict_id != 0 && (!dict || dict->id != info->dict_id)) return FRAME_EDICT;
  if (info->dict_id == 0) dict = NULL;
  if (info->codec == FRAME_RAW) {
    memcpy(dst, src, info->length);
    return frame_check_raw(info, frame);
  }
  if (codec_decompress(c, info, src, dict, dst)) return FRAME_ECORRUPT;
  if (frame_checksum(info->sum, dst, info->length) != info->checksum) return FRAME_ECORRUPT;
  return FRAME_OK;
}

frame_err frame_check_raw(const frame_info *info, const void *frame) {
  const unsigned char *src = (const unsigned char *)frame + FRAME_HEADER_SIZE;
  uint64_t sum;
  if (info->codec != FRAME_RAW) return FRAME_ECODEC; /* not a raw frame */
  sum = info->sum == FRAME_XXH3 ? info->payload_hash : frame_checksum(info->sum, src, info->length);
  return sum == info->checksum ? FRAME_OK : FRAME_ECORRUPT;
}
