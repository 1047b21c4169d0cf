/* resume.h -- resume tokens of a merged read (merge.read's `cursor`; not
 * the kv scan cursor of kv.h): an opaque, URL-safe
 * (base64url, no padding) string carrying the format version, the order,
 * the number of sources, the last emitted key and its source, optionally
 * signed with HMAC-SHA256 (OpenSSL). Plain C: no Lua.
 *
 * Payload: version(1) flags(1) k(2) src(2) nparts(1), then per key part
 * 'i' + int64 big-endian (8) or 's' + length(2) + bytes, then, if signed,
 * HMAC-SHA256("otskit-cursor\0" || payload) (32). */
#ifndef OTSKIT_RESUME_H
#define OTSKIT_RESUME_H

#include <stddef.h>
#include <stdint.h>

#define RESUME_VERSION 1
#define RESUME_MAX_PARTS 16
#define RESUME_MAX_PART 4096        /* bytes of one string part */
#define RESUME_MAX_RAW 8192         /* payload bytes, MAC included */
#define RESUME_MIN_SECRET 16
/* base64url length of RESUME_MAX_RAW bytes */
#define RESUME_MAX_TEXT ((RESUME_MAX_RAW * 4 + 2) / 3)

#define RESUME_F_DESC 1
#define RESUME_F_DEDUP 2
#define RESUME_F_TYPED 4            /* key = primary-key columns */
#define RESUME_F_SIGNED 8

typedef struct resume_part {
  int is_int;
  int64_t i;
  const unsigned char *s;           /* into the owning cursor's raw */
  size_t n;
} resume_part;

typedef struct resume_token {
  unsigned flags;                   /* RESUME_F_DESC | DEDUP | TYPED */
  unsigned k, src;                  /* sources 1..1024, src < k */
  int nparts;                       /* 1..RESUME_MAX_PARTS */
  resume_part part[RESUME_MAX_PARTS];
  unsigned char raw[RESUME_MAX_RAW];
} resume_token;

/* Writes the cursor text for c to out (RESUME_MAX_TEXT bytes), signed when
 * secret != NULL. Returns its length, or 0 when c does not fit (a part
 * over RESUME_MAX_PART, too many parts, bad k/src) -- see *why. */
size_t resume_encode(const resume_token *c, const unsigned char *secret, size_t slen,
                     char *out, const char **why);

/* Parses text into c. With a secret the cursor must carry a valid MAC;
 * without one it must carry none. Returns 0 or -1 with the reason in *why;
 * never reads past text[n). c->part[].s point into c->raw. */
int resume_decode(const char *text, size_t n, const unsigned char *secret,
                  size_t slen, resume_token *c, const char **why);

#endif
