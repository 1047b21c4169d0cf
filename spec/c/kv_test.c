/* kv_test.c -- the kv store against a sorted-array model: random keys
 * (with NUL bytes and shared prefixes), point ops, scans both ways with
 * bounds and limits, overlapping cursors, transactions, drop; and
 * connections opening one new file at once (threads: otskit serve's
 * workers are processes, the file locks the same). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "check.h"
#include "kv.h"

#define NK 400
#define KMAX 6

typedef struct { unsigned char k[KMAX]; size_t n; int present; int val; } mkey;

static unsigned long rng = 88172645463325252UL;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (unsigned)(rng % n);
}

static int cmp_mkey(const void *a, const void *b) {
  const mkey *x = a, *y = b;
  return bytes_cmp(x->k, x->n, y->k, y->n);
}

/* the model's answer to a scan of [lo, hi) into out (indices) */
static int model_scan(mkey *m, int nm, const mkey *lo, const mkey *hi,
                      int reverse, int limit, int *out) {
  int i, n = 0;
  for (i = 0; i < nm; i++) {
    int j = reverse ? nm - 1 - i : i;
    if (!m[j].present) continue;
    if (lo && bytes_cmp(m[j].k, m[j].n, lo->k, lo->n) < 0) continue;
    if (hi && bytes_cmp(m[j].k, m[j].n, hi->k, hi->n) >= 0) continue;
    if (limit >= 0 && n >= limit) break;
    out[n++] = j;
  }
  return n;
}

/* threads opening one new file at the same moment: every open succeeds
 * (the file's WAL switch and its format mark race otherwise: "database is
 * locked" at once, or "not an otskit store ... user_version 1") */
enum { RACERS = 6, RACE_ROUNDS = 60 };
static pthread_barrier_t race_bar;
static char race_path[64];
static int race_ok[RACERS];

static void *racer(void *arg) {
  int i = *(int *)arg;
  kv_db *db;
  char err[256];
  pthread_barrier_wait(&race_bar);
  race_ok[i] = kv_open(race_path, strlen(race_path), KV_BUSY_MS, &db, err, sizeof err) == KV_OK;
  if (!race_ok[i]) fprintf(stderr, "kv_open of a new file beside others: %s\n", err);
  else kv_close_db(db);
  return NULL;
}

static void open_race(void) {
  int round, i, all = 1;
  for (round = 0; round < RACE_ROUNDS && all; round++) {
    pthread_t t[RACERS];
    int ids[RACERS];
    char side[80];
    int fd;
    snprintf(race_path, sizeof race_path, "/tmp/otskit-kv-race-XXXXXX");
    fd = mkstemp(race_path); /* an empty file: a new database */
    CHECK(fd >= 0);
    close(fd);
    CHECK(pthread_barrier_init(&race_bar, NULL, RACERS) == 0);
    for (i = 0; i < RACERS; i++) {
      ids[i] = i;
      CHECK(pthread_create(&t[i], NULL, racer, &ids[i]) == 0);
    }
    for (i = 0; i < RACERS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&race_bar);
    for (i = 0; i < RACERS; i++) all = all && race_ok[i];
    remove(race_path);
    snprintf(side, sizeof side, "%s-wal", race_path); remove(side);
    snprintf(side, sizeof side, "%s-shm", race_path); remove(side);
  }
  CHECK(all);
}

int main(void) {
  kv_db *db;
  kv_table *t, *t2;
  char err[128];
  static mkey m[NK];
  int nm = 0, i, trial, found;
  const void *v, *k;
  size_t vl, kl;
  static int want[NK];

  CHECK(kv_open("/nonexistent-dir/x/y.db", 22, KV_BUSY_MS, &db, err, sizeof err) == KV_ERR && db == NULL);
  /* never a URI, never a name cut short by a NUL, never an empty name */
  CHECK(kv_open("file::memory:", 13, KV_BUSY_MS, &db, err, sizeof err) == KV_BADPATH && db == NULL);
  CHECK(strstr(err, "URI") != NULL);
  CHECK(kv_open("FiLe:x.db", 9, KV_BUSY_MS, &db, err, sizeof err) == KV_BADPATH && db == NULL);
  CHECK(kv_open(":memory:\0x", 10, KV_BUSY_MS, &db, err, sizeof err) == KV_BADPATH && db == NULL);
  CHECK(strstr(err, "NUL") != NULL);
  CHECK(kv_open("", 0, KV_BUSY_MS, &db, err, sizeof err) == KV_BADPATH && db == NULL);
  CHECK(kv_open(NULL, 0, KV_BUSY_MS, &db, err, sizeof err) == KV_BADPATH && db == NULL);
  CHECK(kv_open(":memory:", 8, KV_BUSY_MS, &db, err, sizeof err) == KV_OK);
  CHECK(kv_table_get(db, "t", 0, &found) == NULL && found == 0);
  t = kv_table_get(db, "t \"quoted\"", 1, &found);
  CHECK(t != NULL);
  CHECK(kv_table_get(db, "t \"quoted\"", 0, &found) == t);

  /* distinct random keys over a tiny alphabet: many prefixes and NULs */
  while (nm < NK) {
    mkey x;
    int dup = 0;
    x.n = rnd(KMAX + 1);
    for (i = 0; i < (int)x.n; i++) x.k[i] = (unsigned char)"\0\1a\377"[rnd(4)];
    for (i = 0; i < nm; i++) if (cmp_mkey(&m[i], &x) == 0) dup = 1;
    if (dup) continue;
    x.present = 0; x.val = 0;
    m[nm++] = x;
  }
  qsort(m, NK, sizeof m[0], cmp_mkey);

  /* random puts, overwrites and deletes, checked by point reads */
  for (trial = 0; trial < 3000; trial++) {
    mkey *x = &m[rnd(NK)];
    int op = rnd(3);
    if (op < 2) {
      x->val = (int)rnd(1000000);
      CHECK(kv_put(t, x->k, x->n, &x->val, sizeof x->val) == KV_OK);
      x->present = 1;
    } else {
      CHECK(kv_del(t, x->k, x->n) == (x->present ? KV_OK : KV_NOTFOUND));
      x->present = 0;
    }
  }
  {
    int np = 0;
    for (i = 0; i < NK; i++) {
      int rc = kv_get(t, m[i].k, m[i].n, &v, &vl);
      if (m[i].present) {
        np++;
        CHECK(rc == KV_OK && vl == sizeof(int) && memcmp(v, &m[i].val, vl) == 0);
      } else {
        CHECK(rc == KV_NOTFOUND);
      }
    }
    CHECK(kv_count(t) == np);
  }

  /* scans: random bounds (or none), both directions, random limits */
  for (trial = 0; trial < 300; trial++) {
    kv_cursor c;
    const mkey *lo = rnd(4) ? &m[rnd(NK)] : NULL;
    const mkey *hi = rnd(4) ? &m[rnd(NK)] : NULL;
    int reverse = (int)rnd(2), limit = rnd(3) ? -1 : (int)rnd(20);
    int n = model_scan(m, NK, lo, hi, reverse, limit, want), got = 0, ok = 1;
    CHECK(kv_scan(t, &c, lo ? lo->k : NULL, lo ? lo->n : 0, hi ? hi->k : NULL,
                  hi ? hi->n : 0, reverse, limit) == KV_OK);
    while (kv_next(&c, &k, &kl, &v, &vl) == KV_ROW) {
      if (got >= n || bytes_cmp(k, kl, m[want[got]].k, m[want[got]].n) != 0 ||
          memcmp(v, &m[want[got]].val, sizeof(int)) != 0)
        ok = 0;
      got++;
    }
    CHECK(ok && got == n);
    kv_cursor_close(&c);
    kv_cursor_close(&c); /* idempotent */
  }

  /* two cursors on the same scan statement at once: the second gets a
   * private statement, both see every row */
  {
    kv_cursor a, b;
    int na = 0, nb = 0;
    CHECK(kv_scan(t, &a, NULL, 0, NULL, 0, 0, -1) == KV_OK);
    CHECK(kv_scan(t, &b, NULL, 0, NULL, 0, 0, -1) == KV_OK);
    CHECK(a.owned == 0 && b.owned == 1);
    while (kv_next(&a, &k, &kl, &v, &vl) == KV_ROW) {
      na++;
      if (kv_next(&b, &k, &kl, &v, &vl) == KV_ROW) nb++;
    }
    while (kv_next(&b, &k, &kl, &v, &vl) == KV_ROW) nb++;
    CHECK(na == nb && na == kv_count(t));
    kv_cursor_close(&a);
    kv_cursor_close(&b);
  }

  /* swap: reports the replaced length, -1 for a new key */
  {
    int64_t ol = 0;
    CHECK(kv_swap(t, "swap", 4, "abc", 3, &ol) == KV_OK && ol == -1);
    CHECK(kv_swap(t, "swap", 4, "de", 2, &ol) == KV_OK && ol == 3);
    CHECK(kv_get(t, "swap", 4, &v, &vl) == KV_OK && vl == 2 && memcmp(v, "de", 2) == 0);
    CHECK(kv_del(t, "swap", 4) == KV_OK);
  }

  /* transactions: rollback restores, commit keeps */
  {
    int64_t before = kv_count(t);
    CHECK(kv_begin(db, 1) == KV_OK && kv_in_txn(db));
    CHECK(kv_put(t, "zz", 2, "v", 1) == KV_OK);
    CHECK(kv_rollback(db) == KV_OK && !kv_in_txn(db));
    CHECK(kv_get(t, "zz", 2, &v, &vl) == KV_NOTFOUND && kv_count(t) == before);
    CHECK(kv_begin(db, 1) == KV_OK);
    CHECK(kv_put(t, "zz", 2, "", 0) == KV_OK);
    CHECK(kv_commit(db) == KV_OK);
    CHECK(kv_get(t, "zz", 2, &v, &vl) == KV_OK && vl == 0);
    CHECK(kv_commit(db) == KV_ERR); /* no transaction open */
  }

  /* a rollback ends the cursors left open (an error raised mid-scan):
   * no read snapshot is kept, so after another connection's write this
   * one takes the write lock at once; the cursor then fails, never
   * restarts or ends early as if the scan were done */
  {
    char path[] = "/tmp/otskit-kv-test-XXXXXX";
    char side[64];
    kv_db *a, *b;
    kv_table *ta, *tb;
    kv_cursor c;
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(kv_open(path, strlen(path), 0, &a, err, sizeof err) == KV_OK);
    CHECK(kv_open(path, strlen(path), 0, &b, err, sizeof err) == KV_OK);
    ta = kv_table_get(a, "r", 1, &found);
    CHECK(ta != NULL && kv_put(ta, "1", 1, "x", 1) == KV_OK && kv_put(ta, "2", 1, "y", 1) == KV_OK);
    tb = kv_table_get(b, "r", 1, &found);
    CHECK(tb != NULL);
    CHECK(kv_begin(a, 1) == KV_OK);
    CHECK(kv_scan(ta, &c, NULL, 0, NULL, 0, 0, -1) == KV_OK);
    CHECK(kv_next(&c, &k, &kl, &v, &vl) == KV_ROW);
    CHECK(kv_rollback(a) == KV_OK && !kv_in_txn(a));
    CHECK(kv_put(tb, "3", 1, "z", 1) == KV_OK);
    CHECK(kv_begin(a, 1) == KV_OK);
    CHECK(kv_put(ta, "4", 1, "w", 1) == KV_OK && kv_commit(a) == KV_OK);
    CHECK(kv_next(&c, &k, &kl, &v, &vl) == KV_ERR);
    CHECK(strstr(kv_errmsg(a), "rolled back") != NULL);
    kv_cursor_close(&c);
    CHECK(kv_close_db(a) == KV_OK && kv_close_db(b) == KV_OK);
    remove(path);
    snprintf(side, sizeof side, "%s-wal", path); remove(side);
    snprintf(side, sizeof side, "%s-shm", path); remove(side);
  }

  /* drop closes the cursors over the table; others survive the db close */
  {
    kv_cursor a, b;
    t2 = kv_table_get(db, "other", 1, &found);
    CHECK(t2 != NULL && kv_put(t2, "a", 1, "1", 1) == KV_OK);
    CHECK(kv_scan(t, &a, NULL, 0, NULL, 0, 1, 5) == KV_OK);
    CHECK(kv_scan(t2, &b, NULL, 0, NULL, 0, 0, -1) == KV_OK);
    CHECK(kv_table_drop(db, "t \"quoted\"") == KV_OK);
    CHECK(a.db == NULL && kv_next(&a, &k, &kl, &v, &vl) == KV_DONE);
    CHECK(b.db == db);
    CHECK(kv_table_get(db, "t \"quoted\"", 0, &found) == NULL && found == 0);
    CHECK(kv_close_db(db) == KV_OK);
    CHECK(b.db == NULL);
    kv_cursor_close(&b);
  }

  CHECK(bytes_cmp("a", 1, "ab", 2) < 0 && bytes_cmp("b", 1, "ab", 2) > 0);
  CHECK(bytes_cmp("\0", 1, "", 0) > 0 && bytes_cmp("", 0, "", 0) == 0);
  CHECK(bytes_cmp("\377", 1, "\1", 1) > 0);
  open_race();
  return check_done();
}
