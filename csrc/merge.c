/* merge.c -- loser-tree k-way merge over batches of byte-string keys. */
#include <stdlib.h>
#include <string.h>

#include "merge.h"

/* A source's rank: a pending source sorts before every key (the merge
 * must stop and ask for it), an exhausted one after every key. */
enum { R_PENDING = 0, R_KEY = 1, R_DONE = 2 };

typedef struct msrc {
  unsigned char *arena;        /* key bytes of the current batch */
  size_t alen, acap;
  size_t *ends;                /* ends[i]: end offset of key i in arena */
  uint64_t *pre;               /* pre[i]: prefix8 of key i */
  size_t n, cap, pos;          /* rows in batch, capacity, next row */
  unsigned char *prev;         /* last key of the previous batch */
  size_t prevlen, prevcap;
  int done, open, has_prev;
} msrc;

/* What the tree compares, kept small and apart from the batches: rank,
 * the first 8 key bytes big-endian (decides most comparisons), the key. */
typedef struct mleaf {
  uint64_t pre;
  const unsigned char *cur;
  size_t len;
  int rank;
} mleaf;

struct merge {
  int k, desc, dedup;
  uint64_t limit, emitted;
  struct mnode *tree;          /* tree[0] winner, tree[1..k-1] losers */
  int built, need;
  msrc *s;
  mleaf *leaf;
  unsigned char *last;         /* copy of the last emitted key */
  size_t lastlen, lastcap;
  int lastsrc;
};

static int keycmp(const unsigned char *a, size_t an, const unsigned char *b, size_t bn) {
  size_t n = an < bn ? an : bn;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

int merge_keycmp(const void *a, size_t an, const void *b, size_t bn) {
  return keycmp((const unsigned char *)a, an, (const unsigned char *)b, bn);
}

static uint64_t prefix8(const unsigned char *p, size_t n) {
  uint64_t v = 0;
  size_t i;
  for (i = 0; i < 8; i++) v = (v << 8) | (i < n ? p[i] : 0);
  return v;
}

/* A tree entry: a source with a copy of its rank and prefix, so replaying
 * a path compares mostly within the tree array. */
typedef struct mnode {
  uint64_t pre;
  int src, rank;
} mnode;

static mnode entry(const merge *m, int src) {
  mnode e;
  e.pre = m->leaf[src].pre;
  e.src = src;
  e.rank = m->leaf[src].rank;
  return e;
}

/* Whether entry a goes out before entry b. Prefixes are stored inverted
 * for desc; equal prefixes fall back to the full comparison (zero padding
 * makes "a" and "a\0" equal there). */
static inline int beats(const merge *m, const mnode *a, const mnode *b) {
  if (a->rank != b->rank) return a->rank < b->rank;
  if (a->rank == R_KEY) {
    const mleaf *x, *y;
    int c;
    if (a->pre != b->pre) return a->pre < b->pre;
    x = &m->leaf[a->src];
    y = &m->leaf[b->src];
    c = keycmp(x->cur, x->len, y->cur, y->len);
    if (c) return m->desc ? c > 0 : c < 0;
  }
  return a->src < b->src;
}

static mnode build(merge *m, int node) {
  mnode l, r;
  if (node >= m->k) return entry(m, node - m->k);
  l = build(m, 2 * node);
  r = build(m, 2 * node + 1);
  if (beats(m, &l, &r)) { m->tree[node] = r; return l; }
  m->tree[node] = l;
  return r;
}

/* Source w's key changed and w was the winner: replay its path. */
static void replay(merge *m, int w) {
  mnode cur = entry(m, w);
  int node;
  for (node = (w + m->k) >> 1; node > 0; node >>= 1) {
    mnode *t = &m->tree[node];
    if (beats(m, t, &cur)) {
      mnode x = *t;
      *t = cur;
      cur = x;
    }
  }
  m->tree[0] = cur;
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
  int i;
  if (k < 1 || k > MERGE_MAX_SOURCES) return NULL;
  m = (merge *)calloc(1, sizeof *m);
  if (!m) return NULL;
  m->k = k;
  m->desc = desc != 0;
  m->dedup = dedup != 0;
  m->limit = limit;
  m->need = -1;
  m->lastsrc = -1;
  m->tree = (struct mnode *)calloc((size_t)k, sizeof *m->tree);
  m->s = (msrc *)calloc((size_t)k, sizeof *m->s);
  m->leaf = (mleaf *)calloc((size_t)k, sizeof *m->leaf);
  if (!m->tree || !m->s || !m->leaf) { merge_free(m); return NULL; }
  for (i = 0; i < k; i++) m->leaf[i].rank = R_PENDING;
  return m;
}

void merge_free(merge *m) {
  int i;
  if (!m) return;
  if (m->s)
    for (i = 0; i < m->k; i++) {
      free(m->s[i].arena);
      free(m->s[i].ends);
      free(m->s[i].pre);
      free(m->s[i].prev);
    }
  free(m->s);
  free(m->leaf);
  free(m->tree);
  free(m->last);
  free(m);
}

int merge_begin(merge *m, int src, size_t nrows) {
  msrc *s;
  if (src < 0 || src >= m->k) return MERGE_ESRC;
  s = &m->s[src];
  if (m->leaf[src].rank != R_PENDING || s->open) return MERGE_ESTATE;
  /* keep the last key of the batch being dropped, to check order across batches */
  if (s->n > 0) {
    size_t st = s->n > 1 ? s->ends[s->n - 2] : 0, len = s->ends[s->n - 1] - st;
    if (grow(&s->prev, &s->prevcap, len ? len : 1, 1)) return MERGE_EOOM;
    if (len) memcpy(s->prev, s->arena + st, len);
    s->prevlen = len;
    s->has_prev = 1;
  }
  s->n = s->pos = s->alen = 0;
  /* never NULL, so arena + offset is always defined, empty keys included */
  if (grow(&s->arena, &s->acap, 1, 1)) return MERGE_EOOM;
  if (nrows && reserve_rows(s, nrows)) return MERGE_EOOM;
  s->open = 1;
  return MERGE_OK;
}

int merge_add(merge *m, int src, const void *key, size_t len) {
  msrc *s;
  uint64_t pre = prefix8((const unsigned char *)key, len);
  if (src < 0 || src >= m->k) return MERGE_ESRC;
  s = &m->s[src];
  if (!s->open) return MERGE_ESTATE;
  if (s->n > 0 || s->has_prev) {
    const unsigned char *pk;
    size_t plen;
    uint64_t ppre;
    int c;
    if (s->n > 0) {
      size_t st = s->n > 1 ? s->ends[s->n - 2] : 0;
      pk = s->arena + st;
      plen = s->ends[s->n - 1] - st;
      ppre = s->pre[s->n - 1];
    } else {
      pk = s->prev;
      plen = s->prevlen;
      ppre = prefix8(pk, plen);
    }
    c = ppre != pre ? (ppre < pre ? -1 : 1) : keycmp(pk, plen, (const unsigned char *)key, len);
    if (m->desc ? c < 0 : c > 0) return MERGE_EORDER;
  }
  if (s->n == s->cap && reserve_rows(s, s->n + 1)) return MERGE_EOOM;
  if (len > ((size_t)-1) - s->alen) return MERGE_EOOM;
  if (s->alen + len > s->acap && grow(&s->arena, &s->acap, s->alen + len, 1)) return MERGE_EOOM;
  if (len) memcpy(s->arena + s->alen, key, len);
  s->alen += len;
  s->pre[s->n] = pre;
  s->ends[s->n++] = s->alen;
  return MERGE_OK;
}

static void set_current(const msrc *s, mleaf *l, int desc) {
  size_t st = s->pos ? s->ends[s->pos - 1] : 0;
  l->cur = s->arena + st;
  l->len = s->ends[s->pos] - st;
  l->pre = desc ? ~s->pre[s->pos] : s->pre[s->pos];
}

void merge_end(merge *m, int src, int done) {
  msrc *s;
  if (src < 0 || src >= m->k) return;
  s = &m->s[src];
  if (!s->open) return;
  s->open = 0;
  s->done = done != 0;
  s->pos = 0;
  if (s->n > 0) {
    m->leaf[src].rank = R_KEY;
    set_current(s, &m->leaf[src], m->desc);
  } else {
    m->leaf[src].rank = s->done ? R_DONE : R_PENDING;
  }
  /* the winner can replay its path; any other change needs a rebuild */
  if (m->built && m->tree[0].src == src) replay(m, src);
  else m->built = 0;
}

void merge_abort(merge *m, int src) {
  msrc *s;
  if (src < 0 || src >= m->k) return;
  s = &m->s[src];
  if (!s->open) return;
  s->open = 0;
  s->n = s->pos = s->alen = 0;
  m->leaf[src].rank = R_PENDING;
}

static int keep_last(merge *m, int src, const unsigned char *key, size_t len) {
  if (grow(&m->last, &m->lastcap, len ? len : 1, 1)) return -1;
  if (len) memcpy(m->last, key, len);
  m->lastlen = len;
  m->lastsrc = src;
  return 0;
}

merge_status merge_pull(merge *m, merge_item *out, size_t max, size_t *n) {
  size_t got = 0;
  int lsrc = m->lastsrc, moved = 0, w;
  const unsigned char *lkey = m->last;
  size_t llen = m->lastlen;
  merge_status st;
  *n = 0;
  m->need = -1;
  if (!m->built) {
    m->tree[0] = build(m, 1);
    m->built = 1;
  }
  for (;;) {
    msrc *s;
    mleaf *l;
    if (m->limit && m->emitted >= m->limit) { st = MERGE_END; break; }
    w = m->tree[0].src;
    l = &m->leaf[w];
    if (l->rank == R_PENDING) { m->need = w; st = MERGE_NEED; break; }
    if (l->rank == R_DONE) { st = MERGE_END; break; }
    s = &m->s[w];
    if (m->dedup && lsrc >= 0 && keycmp(lkey, llen, l->cur, l->len) == 0) {
      /* equal to the last emitted key: skip it */
    } else {
      if (got == max) { st = MERGE_MORE; break; }
      out[got].src = (uint32_t)w;
      out[got].row = (uint32_t)s->pos;
      got++;
      m->emitted++;
      lsrc = w;
      lkey = l->cur;
      llen = l->len;
      moved = 1;
    }
    if (++s->pos < s->n) {
      set_current(s, l, m->desc);
    } else {
      /* the batch's arena stays valid until the next merge_begin */
      l->rank = s->done ? R_DONE : R_PENDING;
    }
    replay(m, w);
  }
  /* copy the last key out of its arena: it must survive a refill */
  if (moved && keep_last(m, lsrc, lkey, llen)) { *n = got; return MERGE_ENOMEM; }
  *n = got;
  return st;
}

int merge_need(const merge *m) { return m->need; }

int merge_state(const merge *m, int src) {
  if (src < 0 || src >= m->k) return -1;
  return m->leaf[src].rank; /* R_* equal MERGE_S_* */
}

uint64_t merge_emitted(const merge *m) { return m->emitted; }

uint64_t merge_ready(const merge *m) {
  uint64_t r = 0;
  int i;
  for (i = 0; i < m->k; i++)
    if (m->leaf[i].rank == R_KEY) r += m->s[i].n - m->s[i].pos;
  return r;
}

int merge_exhausted(const merge *m) {
  int i;
  for (i = 0; i < m->k; i++)
    if (m->leaf[i].rank != R_DONE) return 0;
  return 1;
}

int merge_last(const merge *m, const unsigned char **key, size_t *len) {
  *key = m->last;
  *len = m->lastlen;
  return m->lastsrc;
}

int merge_nsources(const merge *m) { return m->k; }
