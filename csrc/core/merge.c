/* merge.c -- loser-tree k-way merge over batches of byte-string keys.
 *
 * The tree compares 64-bit "order prefixes": 8 key bytes big-endian
 * (inverted for desc, so smaller always goes out first), with a pending
 * source at 0 and an exhausted one at UINT64_MAX. The 8 bytes are those
 * after the leading bytes every key added so far shares ("skip": keys such
 * as zero-padded numbers or timestamps often share their first bytes, which
 * would make every prefix equal); when a key breaks that run, skip shrinks
 * and every stored prefix is recomputed. That order agrees
 * with the full order wherever prefixes differ; equal prefixes (rare with
 * real keys) fall back to the source states, then the whole keys, then the
 * source index. The replay of a path is branch-free but for that fallback. */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "merge.h"

#if defined(__GNUC__)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PREFETCH(p) __builtin_prefetch(p)
#define ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define ALWAYS_INLINE
#define UNLIKELY(x) (x)
#define PREFETCH(p) ((void)(p))
#endif

/* A source's state; the values are MERGE_S_PENDING/ROWS/DONE and sort the
 * way the sources go out: pending first (the merge must stop and ask for
 * it), exhausted last. */
enum { R_PENDING = 0, R_KEY = 1, R_DONE = 2 };

#define PRE_PENDING ((uint64_t)0)
#define PRE_DONE (~(uint64_t)0)

typedef struct msrc {
  unsigned char *arena;        /* key bytes of the current batch */
  size_t alen, acap;
  size_t *ends;                /* ends[i]: end offset of key i in arena */
  uint64_t *pre;               /* pre[i]: order prefix of key i */
  size_t n, cap, pos;          /* rows in batch, capacity, next row */
  unsigned char *prev;         /* last key of the previous batch */
  size_t prevlen, prevcap;
  uint64_t prevpre;
  int done, open, has_prev;
} msrc;

/* A tree entry: a source and the order prefix of its current key. */
typedef struct mnode {
  uint64_t pre;
  uint32_t src;
} mnode;

#define MAX_SKIP 64

struct merge {
  int k, desc, dedup;
  int kcap;                    /* sources allocated (>= k after a reset) */
  size_t skip;                 /* leading bytes every key added shares */
  int have_ref;
  unsigned char ref[MAX_SKIP]; /* the first key's first bytes */
  uint64_t limit, emitted;
  mnode *tree;                 /* tree[0] winner, tree[1..k-1] losers */
  int built, need;
  msrc *s;
  unsigned char *rank;         /* R_* of each source */
  unsigned char *last;         /* copy of the last emitted key */
  size_t lastlen, lastcap;
  int lastsrc;
};

/* The first 8 bytes big-endian, zero-padded. */
static ALWAYS_INLINE uint64_t prefix8(const unsigned char *p, size_t n) {
  uint64_t v = 0;
  size_t i;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (n >= 8) {
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
  }
#endif
  for (i = 0; i < 8; i++) v = (v << 8) | (i < n ? p[i] : 0);
  return v;
}

/* The order prefix of a key (its bytes after the shared skip). */
static ALWAYS_INLINE uint64_t order_pre(const merge *m, const unsigned char *key, size_t len) {
  uint64_t pre = len > m->skip ? prefix8(key + m->skip, len - m->skip) : 0;
  return m->desc ? ~pre : pre;
}

/* Key i of source s (valid until the source's next merge_begin). */
static const unsigned char *key_at(const msrc *s, size_t i, size_t *len) {
  size_t st = i ? s->ends[i - 1] : 0;
  *len = s->ends[i] - st;
  return s->arena + st;
}

static uint64_t cur_pre(const merge *m, int src) {
  const msrc *s = &m->s[src];
  if (m->rank[src] == R_KEY) return s->pre[s->pos];
  return m->rank[src] == R_PENDING ? PRE_PENDING : PRE_DONE;
}

/* Key i of source a against key j of source b, in the merge order. */
static int order_cmp(const merge *m, const msrc *a, size_t i, const msrc *b, size_t j) {
  size_t al, bl;
  const unsigned char *ak, *bk;
  int c;
  if (a->pre[i] != b->pre[j]) return a->pre[i] < b->pre[j] ? -1 : 1;
  ak = key_at(a, i, &al);
  bk = key_at(b, j, &bl);
  c = bytes_cmp(ak, al, bk, bl);
  return m->desc ? -c : c;
}

/* Whether source a goes out before source b when their order prefixes
 * are equal. */
static int beats_slow(const merge *m, uint32_t a, uint32_t b) {
  int ra = m->rank[a], rb = m->rank[b];
  if (ra != rb) return ra < rb;
  if (ra == R_KEY) {
    int c = order_cmp(m, &m->s[a], m->s[a].pos, &m->s[b], m->s[b].pos);
    if (c) return c < 0;
  }
  return a < b;
}

static int beats(const merge *m, const mnode *a, const mnode *b) {
  if (a->pre != b->pre) return a->pre < b->pre;
  return beats_slow(m, a->src, b->src);
}

static mnode build(merge *m, int node) {
  mnode l, r;
  if (node >= m->k) {
    l.src = (uint32_t)(node - m->k);
    l.pre = cur_pre(m, (int)l.src);
    return l;
  }
  l = build(m, 2 * node);
  r = build(m, 2 * node + 1);
  if (beats(m, &l, &r)) { m->tree[node] = r; return l; }
  m->tree[node] = l;
  return r;
}

/* Source w was the winner and its prefix is now pre: replay its path. The
 * loser of each match stays; selects, not branches, so random keys cost
 * no mispredictions. */
static void replay(merge *m, uint32_t w, uint64_t pre) {
  mnode *t = m->tree;
  uint32_t src = w;
  size_t node;
  for (node = (w + (size_t)m->k) >> 1; node > 0; node >>= 1) {
    uint64_t tp = t[node].pre, d;
    uint32_t ts = t[node].src, ds;
    /* all ones when the entry at node beats the climbing one: a borrow,
     * not a branch (random keys make it a coin flip) */
    uint64_t mask = (uint64_t)0 - (uint64_t)(tp < pre);
    if (UNLIKELY(tp == pre)) mask = (uint64_t)0 - (uint64_t)beats_slow(m, ts, src);
    d = (tp ^ pre) & mask;
    ds = (ts ^ src) & (uint32_t)mask;
    t[node].pre = tp ^ d;
    t[node].src = ts ^ ds;
    pre ^= d;
    src ^= ds;
  }
  t[0].pre = pre;
  t[0].src = src;
}

static int grow(void *pp, size_t *cap, size_t need, size_t elem) {
  void **p = (void **)pp;
  size_t c = *cap ? *cap : 16;
  void *q;
  if (need <= *cap) return 0;
  while (c < need) {
    if (c > ((size_t)-1) / 2 / elem) return -1;
    c *= 2;
  }
  q = realloc(*p, c * elem);
  if (!q) return -1;
  *p = q;
  *cap = c;
  return 0;
}

/* Room for n rows in ends[] and pre[] (one capacity for both). */
static int reserve_rows(msrc *s, size_t n) {
  size_t c = s->cap;
  uint64_t *q;
  if (n <= s->cap) return 0;
  if (grow(&s->ends, &c, n, sizeof *s->ends)) return -1;
  q = (uint64_t *)realloc(s->pre, c * sizeof *s->pre);
  if (!q) return -1; /* ends grew, cap did not: retried next time */
  s->pre = q;
  s->cap = c;
  return 0;
}

merge *merge_new(int k, int desc, int dedup, uint64_t limit) {
  merge *m;
  if (k < 1 || k > MERGE_MAX_SOURCES) return NULL;
  m = (merge *)calloc(1, sizeof *m);
  if (!m) return NULL;
  if (merge_reset(m, k, desc, dedup, limit) != MERGE_OK) { merge_free(m); return NULL; }
  return m;
}

int merge_reset(merge *m, int k, int desc, int dedup, uint64_t limit) {
  int i;
  if (k < 1 || k > MERGE_MAX_SOURCES) return MERGE_ESRC;
  if (k > m->kcap) { /* more sources: grow; the old ones keep their buffers */
    mnode *t = (mnode *)realloc(m->tree, (size_t)k * sizeof *t);
    unsigned char *r;
    msrc *s;
    if (!t) return MERGE_EOOM;
    m->tree = t;
    r = (unsigned char *)realloc(m->rank, (size_t)k);
    if (!r) return MERGE_EOOM;
    m->rank = r;
    s = (msrc *)realloc(m->s, (size_t)k * sizeof *s);
    if (!s) return MERGE_EOOM;
    m->s = s;
    memset(m->s + m->kcap, 0, (size_t)(k - m->kcap) * sizeof *s);
    m->kcap = k;
  }
  for (i = 0; i < m->kcap; i++) { /* empty, buffers kept */
    msrc *s = &m->s[i];
    s->alen = s->n = s->pos = s->prevlen = 0;
    s->prevpre = 0;
    s->done = s->open = s->has_prev = 0;
  }
  memset(m->rank, R_PENDING, (size_t)k);
  memset(m->tree, 0, (size_t)k * sizeof *m->tree);
  m->k = k;
  m->desc = desc != 0;
  m->dedup = dedup != 0;
  m->limit = limit;
  m->emitted = 0;
  m->skip = 0;
  m->have_ref = 0;
  m->built = 0;
  m->need = -1;
  m->lastlen = 0;
  m->lastsrc = -1;
  return MERGE_OK;
}

size_t merge_footprint(const merge *m) {
  size_t b = sizeof *m + m->lastcap + (size_t)m->kcap * (sizeof *m->tree + sizeof *m->s + 1);
  int i;
  for (i = 0; i < m->kcap; i++) {
    const msrc *s = &m->s[i];
    b += s->acap + s->cap * (sizeof *s->ends + sizeof *s->pre) + s->prevcap;
  }
  return b;
}

void merge_free(merge *m) {
  int i;
  if (!m) return;
  if (m->s)
    for (i = 0; i < m->kcap; i++) {
      free(m->s[i].arena);
      free(m->s[i].ends);
      free(m->s[i].pre);
      free(m->s[i].prev);
    }
  free(m->s);
  free(m->rank);
  free(m->tree);
  free(m->last);
  free(m);
}

int merge_begin(merge *m, int src, size_t nrows) {
  msrc *s;
  if (src < 0 || src >= m->k) return MERGE_ESRC;
  s = &m->s[src];
  if (m->rank[src] != R_PENDING || s->open) return MERGE_ESTATE;
  /* keep the last key of the batch being dropped, to check order across batches */
  if (s->n > 0) {
    size_t len;
    const unsigned char *k = key_at(s, s->n - 1, &len);
    if (grow(&s->prev, &s->prevcap, len ? len : 1, 1)) return MERGE_EOOM;
    if (len) memcpy(s->prev, k, len);
    s->prevlen = len;
    s->prevpre = s->pre[s->n - 1];
    s->has_prev = 1;
  }
  s->n = s->pos = s->alen = 0;
  /* never NULL, so arena + offset is always defined, empty keys included */
  if (grow(&s->arena, &s->acap, 1, 1)) return MERGE_EOOM;
  if (nrows && reserve_rows(s, nrows)) return MERGE_EOOM;
  s->open = 1;
  return MERGE_OK;
}

/* memcpy of a key; keys of 8..32 bytes with fixed-size moves the compiler
 * inlines (a call to memcpy costs more than the copy) */
static ALWAYS_INLINE void copy_key(unsigned char *d, const unsigned char *k, size_t n) {
  if (n >= 16 && n <= 32) {
    memcpy(d, k, 16);
    memcpy(d + n - 16, k + n - 16, 16);
  } else if (n >= 8 && n < 16) {
    memcpy(d, k, 8);
    memcpy(d + n - 8, k + n - 8, 8);
  } else if (n) {
    memcpy(d, k, n);
  }
}

/* Key (key, len) breaks the run of shared leading bytes: shrink skip to
 * what it shares and recompute every stored prefix; the tree is rebuilt at
 * the next merge_pull. */
static void reskip(merge *m, const unsigned char *key, size_t len) {
  size_t n = 0, i;
  int j;
  while (n < m->skip && n < len && key[n] == m->ref[n]) n++;
  m->skip = n;
  for (j = 0; j < m->k; j++) {
    msrc *s = &m->s[j];
    for (i = 0; i < s->n; i++) {
      size_t kl;
      const unsigned char *k = key_at(s, i, &kl);
      s->pre[i] = order_pre(m, k, kl);
    }
    if (s->has_prev) s->prevpre = order_pre(m, s->prev, s->prevlen);
  }
  m->built = 0;
}

/* merge_add once src is known valid and open; static, so merge_add_n
 * inlines it (merge_add itself is exported: calls to it from here would go
 * through the PLT, one per key) */
static ALWAYS_INLINE int add_key(merge *m, msrc *s, const unsigned char *key, size_t len) {
  uint64_t pre;
  if (UNLIKELY(!m->have_ref)) {
    m->skip = len < MAX_SKIP ? len : MAX_SKIP;
    if (m->skip) memcpy(m->ref, key, m->skip);
    m->have_ref = 1;
  } else if (m->skip && (len < m->skip || memcmp(key, m->ref, m->skip) != 0)) {
    reskip(m, key, len);
  }
  pre = order_pre(m, key, len);
  if (s->n > 0 || s->has_prev) {
    uint64_t ppre = s->n > 0 ? s->pre[s->n - 1] : s->prevpre;
    if (ppre > pre) return MERGE_EORDER;
    if (ppre == pre) {
      size_t plen;
      const unsigned char *pk;
      int c;
      if (s->n > 0) pk = key_at(s, s->n - 1, &plen);
      else pk = s->prev, plen = s->prevlen;
      c = bytes_cmp(pk, plen, (const unsigned char *)key, len);
      if (m->desc ? c < 0 : c > 0) return MERGE_EORDER;
    }
  }
  if (s->n == s->cap && reserve_rows(s, s->n + 1)) return MERGE_EOOM;
  if (len > ((size_t)-1) - s->alen) return MERGE_EOOM;
  if (s->alen + len > s->acap && grow(&s->arena, &s->acap, s->alen + len, 1)) return MERGE_EOOM;
  copy_key(s->arena + s->alen, key, len);
  s->alen += len;
  s->pre[s->n] = pre;
  s->ends[s->n++] = s->alen;
  return MERGE_OK;
}

int merge_add(merge *m, int src, const void *key, size_t len) {
  msrc *s;
  if (src < 0 || src >= m->k) return MERGE_ESRC;
  s = &m->s[src];
  if (!s->open) return MERGE_ESTATE;
  return add_key(m, s, (const unsigned char *)key, len);
}

void merge_prefetch(const char *const *keys, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    uintptr_t p = (uintptr_t)keys[i];
    PREFETCH((const void *)(p - 16));
    PREFETCH((const void *)(p + 31));
  }
}

int merge_add_n(merge *m, int src, const char *const *keys, const size_t *lens, size_t n, size_t *added) {
  size_t i = 0;
  int rc = MERGE_OK;
  msrc *s;
  if (src < 0 || src >= m->k) rc = MERGE_ESRC;
  else if (!m->s[src].open) rc = MERGE_ESTATE;
  if (rc != MERGE_OK) {
    if (added) *added = 0;
    return rc;
  }
  s = &m->s[src];
  for (i = 0; i < n; i++) {
    if (i + 8 < n) PREFETCH(keys[i + 8]);
    rc = add_key(m, s, (const unsigned char *)keys[i], lens[i]);
    if (rc != MERGE_OK) break;
  }
  if (added) *added = i;
  return rc;
}

void merge_end(merge *m, int src, int done) {
  msrc *s;
  if (src < 0 || src >= m->k) return;
  s = &m->s[src];
  if (!s->open) return;
  s->open = 0;
  s->done = done != 0;
  s->pos = 0;
  if (s->n > 0) m->rank[src] = R_KEY;
  else m->rank[src] = s->done ? R_DONE : R_PENDING;
  /* the winner can replay its path; any other change needs a rebuild */
  if (m->built && m->tree[0].src == (uint32_t)src) replay(m, (uint32_t)src, cur_pre(m, src));
  else m->built = 0;
}

void merge_abort(merge *m, int src) {
  msrc *s;
  if (src < 0 || src >= m->k) return;
  s = &m->s[src];
  if (!s->open) return;
  s->open = 0;
  s->n = s->pos = s->alen = 0;
  m->rank[src] = R_PENDING;
}

static int keep_last(merge *m, int src, const unsigned char *key, size_t len) {
  if (grow(&m->last, &m->lastcap, len ? len : 1, 1)) return -1;
  if (len) memcpy(m->last, key, len);
  m->lastlen = len;
  m->lastsrc = src;
  return 0;
}

merge_status merge_pull(merge *m, merge_item *out, size_t max, size_t *n) {
  size_t got = 0, lrow = 0;
  int lsrc = -1;
  uint64_t stop = m->limit ? m->limit : ~(uint64_t)0;
  merge_status st;
  *n = 0;
  m->need = -1;
  if (!m->built) {
    m->tree[0] = build(m, 1);
    m->built = 1;
  }
  for (;;) {
    msrc *s;
    uint32_t w = m->tree[0].src;
    uint64_t pre = m->tree[0].pre;
    size_t pos;
    if (m->emitted >= stop) { st = MERGE_END; break; }
    if (UNLIKELY(pre == PRE_PENDING || pre == PRE_DONE) && m->rank[w] != R_KEY) {
      if (m->rank[w] == R_PENDING) { m->need = (int)w; st = MERGE_NEED; }
      else st = MERGE_END;
      break;
    }
    s = &m->s[w];
    pos = s->pos;
    if (m->dedup) {
      /* equal to the last emitted key: skip it */
      size_t cl, ll;
      const unsigned char *ck = key_at(s, pos, &cl), *lk;
      int have = 1;
      if (lsrc >= 0) lk = key_at(&m->s[lsrc], lrow, &ll);
      else if (m->lastsrc >= 0) lk = m->last, ll = m->lastlen;
      else have = 0;
      if (have && bytes_cmp(lk, ll, ck, cl) == 0) goto next;
    }
    if (got == max) { st = MERGE_MORE; break; }
    out[got].src = w;
    out[got].row = (uint32_t)pos;
    got++;
    m->emitted++;
    lsrc = (int)w;
    lrow = pos;
  next:
    if (++pos < s->n) {
      pre = s->pre[pos];
    } else {
      /* the batch's keys stay valid until the next merge_begin */
      m->rank[w] = s->done ? R_DONE : R_PENDING;
      pre = s->done ? PRE_DONE : PRE_PENDING;
    }
    s->pos = pos;
    replay(m, w, pre);
  }
  /* copy the last key out of its arena: it must survive a refill */
  if (lsrc >= 0) {
    size_t len;
    const unsigned char *k = key_at(&m->s[lsrc], lrow, &len);
    if (keep_last(m, lsrc, k, len)) { *n = got; return MERGE_ENOMEM; }
  }
  *n = got;
  return st;
}

int merge_need(const merge *m) { return m->need; }

int merge_state(const merge *m, int src) {
  if (src < 0 || src >= m->k) return -1;
  return m->rank[src]; /* R_* equal MERGE_S_* */
}

uint64_t merge_emitted(const merge *m) { return m->emitted; }

uint64_t merge_bound(const merge *m) {
  const msrc *f = NULL;
  uint64_t r = 0;
  int i;
  for (i = 0; i < m->k; i++) { /* the frontier: the smallest last key of a source that goes on */
    const msrc *s = &m->s[i];
    if (m->rank[i] == R_PENDING) return 0;
    if (m->rank[i] == R_KEY && !s->done && (!f || order_cmp(m, s, s->n - 1, f, f->n - 1) < 0)) f = s;
  }
  for (i = 0; i < m->k; i++) {
    const msrc *s = &m->s[i];
    size_t lo = s->pos, hi = s->n;
    if (m->rank[i] != R_KEY) continue;
    if (!f) lo = hi; /* every source left ends with its rows: all go out */
    while (lo < hi) { /* rows up to the frontier, ties included */
      size_t mid = lo + (hi - lo) / 2;
      if (order_cmp(m, s, mid, f, f->n - 1) <= 0) lo = mid + 1; else hi = mid;
    }
    r += lo - s->pos;
  }
  if (m->limit && m->limit - m->emitted < r) r = m->limit - m->emitted;
  return r;
}

int merge_exhausted(const merge *m) {
  int i;
  for (i = 0; i < m->k; i++)
    if (m->rank[i] != R_DONE) return 0;
  return 1;
}

int merge_last(const merge *m, const unsigned char **key, size_t *len) {
  *key = m->last;
  *len = m->lastlen;
  return m->lastsrc;
}

int merge_nsources(const merge *m) { return m->k; }
