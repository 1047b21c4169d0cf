/* merge_test.c -- the loser tree against qsort on random sources fed in
 * random batches (both orders, dedup, limits, k up to 1024, keys whose
 * 8-byte prefixes tie), and cursor
 * round trips, tampering and truncation. */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "check.h"
#include "resume.h"
#include "merge.h"

static unsigned long rs = 12345;
static unsigned rnd(unsigned n) { /* [0, n) */
  rs = rs * 6364136223846793005ul + 1442695040888963407ul;
  return (unsigned)((rs >> 33) % n);
}

typedef struct row { unsigned char key[40]; size_t len; int src, idx; } row;
static int g_desc;
static int bound_ok = 1;
static merge *g_reuse;

static int row_cmp(const void *a, const void *b) {
  const row *x = (const row *)a, *y = (const row *)b;
  int c = bytes_cmp(x->key, x->len, y->key, y->len);
  if (c) return g_desc ? -c : c;
  return x->src - y->src;
}

/* One random merge, checked against qsort; returns 1 when equal. */
static int trial(int k, int desc, int dedup, unsigned limit) {
  row *all, **src;
  size_t *n, *next, *off, total = 0, got = 0, want, i, since = 0;
  uint64_t bound;
  /* half the trials reuse one merge through merge_reset (any k after any
   * other, buffers and state left by the previous trial) */
  merge *m = rnd(2) ? merge_new(k, desc, dedup, limit) : NULL;
  int reused = m == NULL;
  if (reused) {
    if (!g_reuse) g_reuse = merge_new(1, 0, 0, 0);
    if (merge_reset(g_reuse, k, desc, dedup, limit) != MERGE_OK) return 0;
    m = g_reuse;
  }
  merge_item items[37];
  int s, ok = 1, mode = (int)rnd(3);
  unsigned char shared[34];
  size_t nshared = rnd(35);
  g_desc = desc;
  for (i = 0; i < nshared; i++) shared[i] = (unsigned char)(rnd(3) * 127);
  src = (row **)calloc((size_t)k, sizeof *src);
  n = (size_t *)calloc((size_t)k * 3, sizeof *n);
  next = n + k;
  off = next + k;
  for (s = 0; s < k; s++) {
    n[s] = rnd(4) ? rnd(60) : 0;
    src[s] = (row *)calloc(n[s] + 1, sizeof(row));
    for (i = 0; i < n[s]; i++) {
      row *r = &src[s][i];
      /* short keys over {0, 127, 254}; up to 10 bytes over {0, 255}: the
       * tree's 8-byte prefixes tie, and hit 0 and all-ones (the values of
       * pending and exhausted sources) in both orders; or a run of leading
       * bytes most keys share (the merge skips it) that some keys break */
      if (mode == 2) {
        size_t c = rnd(8) ? nshared : rnd((unsigned)nshared + 1), t = rnd(4);
        memcpy(r->key, shared, c);
        for (want = 0; want < t; want++) r->key[c + want] = (unsigned char)(rnd(3) * 127);
        r->len = c + t;
      } else {
        r->len = mode ? rnd(11) : rnd(4);
        for (want = 0; want < r->len; want++)
          r->key[want] = (unsigned char)(mode ? rnd(2) * 255 : rnd(3) * 127);
      }
      r->src = s;
    }
    qsort(src[s], n[s], sizeof(row), row_cmp);
    for (i = 0; i < n[s]; i++) src[s][i].idx = (int)i;
    total += n[s];
  }
  all = (row *)calloc(total + 1, sizeof(row));
  for (s = 0, want = 0; s < k; s++)
    for (i = 0; i < n[s]; i++) all[want++] = src[s][i];
  qsort(all, total, sizeof(row), row_cmp);
  if (dedup) { /* keep the first of equal keys */
    size_t w = 0;
    for (i = 0; i < total; i++)
      if (w == 0 || bytes_cmp(all[w - 1].key, all[w - 1].len, all[i].key, all[i].len) != 0)
        all[w++] = all[i];
    total = w;
  }
  if (limit && total > limit) total = limit;
  bound = merge_bound(m);
  for (;;) {
    size_t cnt, j;
    merge_status st = merge_pull(m, items, 1 + rnd(37), &cnt);
    for (j = 0; j < cnt; j++) {
      const row *r = &src[items[j].src][off[items[j].src] + items[j].row];
      if (got >= total || r->src != all[got].src || r->idx != all[got].idx) ok = 0;
      got++;
    }
    /* merge_bound: never below what the pulls until the next push emit,
     * and not 0 when they emit something (exact but for equal keys) */
    since += cnt;
    if (since > bound || (st != MERGE_MORE && bound > 0 && since == 0 && !dedup)) bound_ok = 0;
    if (st == MERGE_NEED) {
      s = merge_need(m);
      if (merge_state(m, s) != MERGE_S_PENDING) ok = 0;
      cnt = rnd(3) ? 1 + rnd(9) : 0; /* empty batches too */
      if (cnt > n[s] - next[s]) cnt = n[s] - next[s];
      off[s] = next[s];
      if (merge_begin(m, s, cnt) != MERGE_OK) ok = 0;
      if (rnd(2)) {
        for (j = next[s]; j < next[s] + cnt; j++)
          if (merge_add(m, s, src[s][j].key, src[s][j].len) != MERGE_OK) ok = 0;
      } else { /* the same through merge_add_n */
        const char *kp[9];
        size_t kl[9], added = 99;
        for (j = 0; j < cnt; j++) {
          kp[j] = (const char *)src[s][next[s] + j].key;
          kl[j] = src[s][next[s] + j].len;
        }
        if (merge_add_n(m, s, kp, kl, cnt, &added) != MERGE_OK || added != cnt) ok = 0;
      }
      next[s] += cnt;
      merge_end(m, s, next[s] == n[s] && rnd(4));
      bound = merge_bound(m);
      since = 0;
    } else if (st == MERGE_END) {
      break;
    } else if (st != MERGE_MORE) {
      ok = 0;
      break;
    }
  }
  if (got != total) ok = 0;
  if (!bound_ok) ok = 0;
  if (!limit && !merge_exhausted(m)) ok = 0;
  for (s = 0; s < k; s++) free(src[s]);
  free(src);
  free(n);
  free(all);
  if (!reused) merge_free(m);
  return ok;
}

static void test_errors(void) {
  merge *m = merge_new(2, 0, 0, 0);
  merge_item it[4];
  size_t n;
  const unsigned char *lk;
  size_t ll;
  CHECK(merge_new(0, 0, 0, 0) == NULL);
  CHECK(merge_new(MERGE_MAX_SOURCES + 1, 0, 0, 0) == NULL);
  CHECK(merge_begin(m, 2, 0) == MERGE_ESRC);
  CHECK(merge_add(m, 0, "a", 1) == MERGE_ESTATE); /* not begun */
  CHECK(merge_begin(m, 0, 2) == MERGE_OK);
  CHECK(merge_add(m, 0, "b", 1) == MERGE_OK);
  CHECK(merge_add(m, 0, "a", 1) == MERGE_EORDER);
  merge_abort(m, 0);
  {
    const char *kp[3] = {"a", "c", "b"};
    size_t kl[3] = {1, 1, 1}, added = 0;
    CHECK(merge_begin(m, 0, 3) == MERGE_OK);
    CHECK(merge_add_n(m, 0, kp, kl, 3, &added) == MERGE_EORDER && added == 2);
    merge_abort(m, 0);
  }
  CHECK(merge_state(m, 0) == MERGE_S_PENDING);
  CHECK(merge_begin(m, 0, 2) == MERGE_OK);
  CHECK(merge_add(m, 0, "a", 1) == MERGE_OK);
  CHECK(merge_add(m, 0, "ab", 2) == MERGE_OK); /* "a" < "ab" */
  merge_end(m, 0, 0);
  CHECK(merge_begin(m, 0, 1) == MERGE_ESTATE); /* still has rows */
  CHECK(merge_pull(m, it, 4, &n) == MERGE_NEED && n == 0 && merge_need(m) == 1);
  CHECK(merge_begin(m, 1, 0) == MERGE_OK);
  merge_end(m, 1, 1);
  CHECK(merge_state(m, 1) == MERGE_S_DONE);
  CHECK(merge_begin(m, 1, 0) == MERGE_ESTATE);
  CHECK(merge_pull(m, it, 4, &n) == MERGE_NEED && n == 2 && merge_need(m) == 0);
  CHECK(merge_last(m, &lk, &ll) == 0 && ll == 2 && memcmp(lk, "ab", 2) == 0);
  CHECK(merge_begin(m, 0, 1) == MERGE_OK);
  CHECK(merge_add(m, 0, "a", 1) == MERGE_EORDER); /* before the last batch's "ab" */
  CHECK(merge_add(m, 0, "ab", 2) == MERGE_OK);
  merge_end(m, 0, 1);
  CHECK(merge_pull(m, it, 4, &n) == MERGE_END && n == 1 && merge_exhausted(m));
  CHECK(merge_emitted(m) == 3);
  merge_free(m);
  merge_free(NULL);
}

static void test_cursor(void) {
  static resume_token c, d;
  char text[RESUME_MAX_TEXT];
  const char *why = NULL;
  const unsigned char *key = (const unsigned char *)"sixteen byte key!";
  size_t n, i;
  unsigned char big[RESUME_MAX_PART + 1];
  memset(&c, 0, sizeof c);
  c.flags = RESUME_F_DESC | RESUME_F_TYPED;
  c.k = 16;
  c.src = 15;
  c.nparts = 3;
  c.part[0].is_int = 1;
  c.part[0].i = INT64_MIN;
  c.part[1].s = (const unsigned char *)"a\0b";
  c.part[1].n = 3;
  c.part[2].is_int = 1;
  c.part[2].i = -1;
  n = resume_encode(&c, key, 17, text, &why);
  CHECK(n > 0);
  for (i = 0; i < n; i++) CHECK(strchr("+/=", text[i]) == NULL);
  CHECK(resume_decode(text, n, key, 17, &d, &why) == 0);
  CHECK(d.flags == c.flags && d.k == 16 && d.src == 15 && d.nparts == 3);
  CHECK(d.part[0].is_int && d.part[0].i == INT64_MIN);
  CHECK(!d.part[1].is_int && d.part[1].n == 3 && memcmp(d.part[1].s, "a\0b", 3) == 0);
  CHECK(d.part[2].is_int && d.part[2].i == -1);
  /* every truncation and every one-character change is refused */
  for (i = 0; i < n; i++) {
    char saved = text[i];
    int bad = 1;
    CHECK(resume_decode(text, i, key, 17, &d, &why) != 0);
    text[i] = saved == 'A' ? 'B' : 'A';
    bad = resume_decode(text, n, key, 17, &d, &why) != 0;
    CHECK(bad);
    text[i] = saved;
  }
  CHECK(resume_decode(text, n, (const unsigned char *)"another key 1234", 16, &d, &why) != 0);
  CHECK(resume_decode(text, n, NULL, 0, &d, &why) != 0);
  /* unsigned: accepted without a secret only */
  n = resume_encode(&c, NULL, 0, text, &why);
  CHECK(resume_decode(text, n, NULL, 0, &d, &why) == 0);
  CHECK(resume_decode(text, n, key, 17, &d, &why) != 0);
  /* limits */
  memset(big, 'x', sizeof big);
  c.flags = 0;
  c.nparts = 1;
  c.part[0].is_int = 0;
  c.part[0].s = big;
  c.part[0].n = sizeof big;
  CHECK(resume_encode(&c, NULL, 0, text, &why) == 0);
  c.part[0].n = RESUME_MAX_PART;
  n = resume_encode(&c, key, 17, text, &why);
  CHECK(n > 0 && resume_decode(text, n, key, 17, &d, &why) == 0 && d.part[0].n == RESUME_MAX_PART);
  c.src = 16;
  CHECK(resume_encode(&c, NULL, 0, text, &why) == 0);
  CHECK(resume_decode("", 0, NULL, 0, &d, &why) != 0);
  CHECK(resume_decode("AQAAAQAAAXMAAWF", 15, NULL, 0, &d, &why) != 0); /* non-canonical tail */
}

/* merge_bound is exact on distinct keys: the rows up to the last key of
 * the source that runs out first, in both orders. */
static void test_bound(void) {
  static const char *const a[] = {"a", "c", "e"}, *const b[] = {"b", "d"};
  merge_item items[8];
  size_t n = 0, i;
  int desc;
  for (desc = 0; desc < 2; desc++) {
    merge *m = merge_new(2, desc, 0, 0);
    CHECK(merge_bound(m) == 0); /* nothing pushed: the pull stops at once */
    merge_begin(m, 0, 3);
    for (i = 0; i < 3; i++) merge_add(m, 0, desc ? a[2 - i] : a[i], 1);
    merge_end(m, 0, 0);
    CHECK(merge_bound(m) == 0); /* source 1 is still pending */
    merge_begin(m, 1, 2);
    for (i = 0; i < 2; i++) merge_add(m, 1, desc ? b[1 - i] : b[i], 1);
    merge_end(m, 1, 0);
    /* asc: up to source 1's "d" (a b c d); desc: up to its "b" (e d c b) */
    CHECK(merge_bound(m) == 4);
    CHECK(merge_pull(m, items, 8, &n) == MERGE_NEED && n == 4 && merge_need(m) == 1);
    CHECK(merge_bound(m) == 0);
    merge_free(m);
  }
  {
    merge *m = merge_new(2, 0, 0, 2); /* the limit counts */
    merge_begin(m, 0, 3);
    for (i = 0; i < 3; i++) merge_add(m, 0, a[i], 1);
    merge_end(m, 0, 1);
    merge_begin(m, 1, 2);
    for (i = 0; i < 2; i++) merge_add(m, 1, b[i], 1);
    merge_end(m, 1, 1);
    CHECK(merge_bound(m) == 2); /* both done: all 5 rows, capped at 2 */
    merge_free(m);
  }
}

int main(void) {
  int t, ok = 1, k;
  for (t = 0; t < 400; t++) {
    k = rnd(8) ? 1 + (int)rnd(20) : 1 + (int)rnd(MERGE_MAX_SOURCES);
    if (!trial(k, (int)rnd(2), rnd(4) == 0, rnd(5) ? 0 : 1 + rnd(100))) ok = 0;
  }
  CHECK(ok);
  CHECK(trial(1, 0, 0, 0));
  CHECK(trial(MERGE_MAX_SOURCES, 1, 0, 0));
  /* reset refuses a bad k and leaves the merge usable */
  if (!g_reuse) g_reuse = merge_new(3, 0, 0, 0);
  CHECK(merge_reset(g_reuse, 0, 0, 0, 0) == MERGE_ESRC);
  CHECK(merge_reset(g_reuse, MERGE_MAX_SOURCES + 1, 0, 0, 0) == MERGE_ESRC);
  CHECK(merge_footprint(g_reuse) > 0);
  merge_free(g_reuse);
  test_bound();
  test_errors();
  test_cursor();
  return check_done();
}
