/* frame.h -- self-describing compression frames for attribute values:
 * a 36-byte header, then the payload. Plain C: no Lua.
 *
 * Header (integers little-endian):
 *   0  magic "OTKF"            4
 *   4  version (1)             1
 *   5  codec                   1   frame_codec
 *   6  checksum kind           1   frame_sum
 *   7  reserved, 0             1
 *   8  dictionary id           4   0 = none (zstd only)
 *  12  original length         4
 *  16  payload length          4
 *  20  checksum of original    8   XXH3-64 or XXH64 (seed 0)
 *  28  payload check           4   low 32 bits of XXH3-64 of the payload
 *  32  header check            4   low 32 bits of XXH3-64 of bytes 0..31
 *
 * Every field is covered by the header check, the payload by the payload
 * check (tested before decompressing) and the original bytes by the
 * checksum, so any change of a frame is reported, never decoded. */
#ifndef OTSKIT_FRAME_H
#define OTSKIT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <xxhash.h>

/* XXH3 through libxxhash's run-time dispatch (AVX2 / AVX-512 when the CPU
 * has them; the plain entry points of a distribution build are SSE2 only):
 * the same values, 2-4x faster on long inputs. Used for every XXH3 over
 * data (frames and chunks); short headers keep the plain calls. */
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>
#define OTSK_XXH_DISPATCH 1
#endif
#endif
#ifdef OTSK_XXH_DISPATCH
#define otsk_xxh3_64 XXH3_64bits_dispatch
#define otsk_xxh3_64_seed XXH3_64bits_withSeed_dispatch
#define otsk_xxh3_128 XXH3_128bits_dispatch
#define otsk_xxh3_128_update XXH3_128bits_update_dispatch
#define otsk_xxh3_64_update XXH3_64bits_update_dispatch
#else
#define otsk_xxh3_64 XXH3_64bits
#define otsk_xxh3_64_seed XXH3_64bits_withSeed
#define otsk_xxh3_128 XXH3_128bits
#define otsk_xxh3_128_update XXH3_128bits_update
#define otsk_xxh3_64_update XXH3_64bits_update
#endif

#define FRAME_HEADER_SIZE 36
#define FRAME_VERSION 1
/* the longest original or payload a header can describe */
#define FRAME_MAX_LEN 0xFFFFFFFFu

typedef enum { FRAME_RAW = 0, FRAME_ZSTD = 1, FRAME_LZ4 = 2, FRAME_ZLIB = 3 } frame_codec;
#define FRAME_NCODECS 4
typedef enum { FRAME_XXH3 = 0, FRAME_XXH64 = 1 } frame_sum;

typedef enum {
  FRAME_OK = 0,
  FRAME_ETRUNCATED,  /* shorter than its header says */
  FRAME_ECORRUPT,    /* bad magic, header check, payload or checksum */
  FRAME_EVERSION,    /* a valid header of a version this build cannot read */
  FRAME_ECODEC,      /* a valid header naming an unknown codec or checksum */
  FRAME_EDICT,       /* needs a dictionary that was not given */
  FRAME_ETOOLARGE,   /* longer than max_size (or than a header can say) */
  FRAME_ENOMEM,
  FRAME_ELIB         /* the compression library failed */
} frame_err;

/* Stable code string of e: "CorruptFrame", "TruncatedFrame", ... */
const char *frame_errcode(frame_err e);
/* Codec name ("raw", "zstd", "lz4", "zlib") or NULL. */
const char *frame_codec_name(int codec);

/* Reusable compression state: zstd contexts, an lz4 state, zlib streams
 * and a scratch buffer. One per thread / Lua state; not shared. */
typedef struct frame_ctx frame_ctx;
frame_ctx *frame_ctx_new(void);
void frame_ctx_free(frame_ctx *ctx);
/* A scratch buffer of at least n bytes owned by ctx (valid until the next
 * call on ctx), or NULL when out of memory. */
unsigned char *frame_ctx_scratch(frame_ctx *ctx, size_t n);
/* Frees the scratch buffer if it is larger than keep bytes. */
void frame_ctx_trim(frame_ctx *ctx, size_t keep);

/* A zstd dictionary: its bytes, id and prepared CDict/DDict (made once,
 * CDicts per compression level on first use). Read-only once made, so one
 * dictionary can serve any number of contexts. */
typedef struct frame_dict frame_dict;
/* Copies p[0..n). A zstd-format dictionary keeps its own id; raw content
 * gets a nonzero id derived from its XXH3. NULL when out of memory. */
frame_dict *frame_dict_new(const void *p, size_t n);
void frame_dict_free(frame_dict *d);
uint32_t frame_dict_id(const frame_dict *d);
const void *frame_dict_bytes(const frame_dict *d, size_t *n);

/* ZDICT training: writes a dictionary of at most cap bytes to dst from the
 * nsamples samples concatenated in samples (sizes[i] each). Returns its
 * length, or 0 with a message in *why. */
size_t frame_dict_train(void *dst, size_t cap, const void *samples,
                        const size_t *sizes, unsigned nsamples, const char **why);

typedef struct {
  frame_codec codec;
  int level;             /* zstd level; zlib 0..9; lz4 acceleration >= 1 */
  int auto_raw;          /* store raw when compression does not shrink */
  frame_sum sum;
  const frame_dict *dict; /* zstd only; NULL for none */
} frame_opts;

/* The largest frame frame_pack can make from n bytes. */
size_t frame_bound(frame_codec codec, size_t n);

/* Packs src[0..n) into dst (cap >= frame_bound) and sets *out_len. With
 * auto_raw the frame is never longer than n + FRAME_HEADER_SIZE. */
frame_err frame_pack(frame_ctx *ctx, const frame_opts *o, const void *src,
                     size_t n, unsigned char *dst, size_t cap, size_t *out_len);

typedef struct {
  frame_codec codec;
  frame_sum sum;
  uint32_t dict_id;
  uint32_t length;       /* original length */
  uint32_t payload_len;
  uint64_t checksum;
  uint64_t payload_hash; /* XXH3-64 of the payload (its low half is the check) */
} frame_info;

/* Checks a frame's header, its length against the header and the payload
 * check; fills *info. Decompresses nothing. */
frame_err frame_parse(const void *p, size_t n, frame_info *info);

/* Decodes the frame p[0..n) (already checked by frame_parse into *info)
 * into dst (info->length bytes) and verifies the checksum. dict must be
 * the dictionary named by info->dict_id (NULL when it is 0). */
frame_err frame_decode(frame_ctx *ctx, const frame_info *info, const void *p,
                       const frame_dict *dict, unsigned char *dst);

/* Verifies the checksum of a raw frame (checked by frame_parse into *info)
 * whose payload, in place, is the value: no copy, and an XXH3 checksum is
 * not computed again (it is the payload hash frame_parse made). */
frame_err frame_check_raw(const frame_info *info, const void *frame);

/* Checksum of p[0..n) as stored in frames. */
uint64_t frame_checksum(frame_sum sum, const void *p, size_t n);

#endif
