/* kv.c -- the ordered byte-key store over the SQLite C API (see kv.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>
#include <xxhash.h>

#include "kv.h"

/* "otsk" and the stored-row format: 1 = values with the xxh3 trailer */
#define KV_APP_ID 0x6f74736b
#define KV_FORMAT 1
#define SUM_LEN 8

enum { S_GET, S_PUT, S_DEL, S_COUNT, S_FWD, S_FWD_OPEN, S_REV, S_REV_OPEN, S_INS, S_N };

struct kv_table {
  kv_db *db;
  char *name;
  sqlite3_stmt *st[S_N];   /* prepared lazily */
  int busy[S_N];           /* a cursor holds the cached scan statement */
  struct kv_table *next;
};

struct kv_db {
  sqlite3 *sql;
  sqlite3_stmt *begin, *begin_read, *commit, *rollback, *schema;
  kv_table *tables;
  kv_cursor *cursors;      /* open cursors, closed with the db */
  unsigned char *buf;      /* value + checksum being written */
  size_t cap;
  int errclass;
  char err[256];
  void *ext;               /* one extension's state (kv_set_ext) */
  void (*ext_free)(void *);
};

/* Records the failure of the last SQLite call; returns KV_ERR. */
static int fail(kv_db *db) {
  int rc = sqlite3_extended_errcode(db->sql) & 0xff;
  db->errclass = rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? KV_EBUSY
               : rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? KV_ECORRUPT
               : rc == SQLITE_FULL ? KV_EFULL : KV_EOTHER;
  snprintf(db->err, sizeof db->err, "%s", sqlite3_errmsg(db->sql));
  return KV_ERR;
}

static int fail_msg(kv_db *db, int cls, const char *msg) {
  db->errclass = cls;
  snprintf(db->err, sizeof db->err, "%s", msg);
  return KV_ERR;
}

/* the trailer: xxh3 of the value seeded with the key's, little-endian */
static void checksum(const void *k, size_t kl, const void *v, size_t vl,
                     unsigned char out[SUM_LEN]) {
  uint64_t h = XXH3_64bits_withSeed(v, vl, XXH3_64bits(k, kl));
  int i;
  for (i = 0; i < SUM_LEN; i++) out[i] = (unsigned char)(h >> (8 * i));
}

/* Checks a stored value against its key; shortens *vl to the payload. */
static int verify(kv_db *db, const void *k, size_t kl, const void *v, size_t *vl) {
  unsigned char sum[SUM_LEN];
  if (*vl < SUM_LEN) return fail_msg(db, KV_ECORRUPT, "stored row is damaged (shorter than its checksum)");
  *vl -= SUM_LEN;
  checksum(k, kl, v, *vl, sum);
  if (memcmp(sum, (const unsigned char *)v + *vl, SUM_LEN) != 0)
    return fail_msg(db, KV_ECORRUPT, "stored row is damaged (checksum mismatch)");
  return KV_OK;
}

/* value || checksum in db->buf, ready to bind */
static const void *seal(kv_db *db, const void *k, size_t kl, const void *v, size_t vl) {
  if (vl > SIZE_MAX - SUM_LEN) return NULL;
  if (db->cap < vl + SUM_LEN) {
    size_t cap = vl + SUM_LEN < 256 ? 256 : vl + SUM_LEN;
    unsigned char *b = realloc(db->buf, cap);
    if (b == NULL) return NULL;
    db->buf = b;
    db->cap = cap;
  }
  if (vl) memcpy(db->buf, v, vl);
  checksum(k, kl, v, vl, db->buf + vl);
  return db->buf;
}

/* Statement texts; %w is the table name quoted for "..." by sqlite3_mprintf. */
static const char *const stmt_sql[S_N] = {
  "SELECT value FROM \"%w\" WHERE key = ?1",
  "INSERT OR REPLACE INTO \"%w\"(key, value) VALUES (?1, ?2)",
  "DELETE FROM \"%w\" WHERE key = ?1",
  "SELECT count(*) FROM \"%w\"",
  "SELECT key, value FROM \"%w\" WHERE key >= ?1 AND key < ?2 ORDER BY key ASC LIMIT ?3",
  "SELECT key, value FROM \"%w\" WHERE key >= ?1 ORDER BY key ASC LIMIT ?3",
  "SELECT key, value FROM \"%w\" WHERE key >= ?1 AND key < ?2 ORDER BY key DESC LIMIT ?3",
  "SELECT key, value FROM \"%w\" WHERE key >= ?1 ORDER BY key DESC LIMIT ?3",
  "INSERT OR IGNORE INTO \"%w\"(key, value) VALUES (?1, ?2)",
};

static int prepare(sqlite3 *sql, const char *text, sqlite3_stmt **out) {
  return sqlite3_prepare_v2(sql, text, -1, out, NULL) == SQLITE_OK ? KV_OK : KV_ERR;
}

static int64_t pragma_int(kv_db *db, const char *q) {
  sqlite3_stmt *s;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db->sql, q, -1, &s, NULL) != SQLITE_OK) return -1;
  if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

/* PRAGMA journal_mode=WAL on a new file (fresh: none or empty before
 * the open) fails SQLITE_BUSY at once (no busy handler) while another
 * connection opens it too: tried again for the busy timeout. An existing
 * file gets one try (busy: another connection holds it). */
static int set_wal(kv_db *db, int fresh, int busy_ms) {
  int rc, waited = 0;
  while ((rc = sqlite3_exec(db->sql, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, NULL)) ==
             SQLITE_BUSY && fresh && waited < busy_ms) {
    sqlite3_sleep(2);
    waited += 2;
  }
  return rc;
}

/* Marks a new file as ours, refuses a foreign or older one with tables.
 * Checked and marked in one write transaction: connections opening a new
 * file at once (the workers of otskit serve) each find it new or marked,
 * never half marked (application_id set, user_version not yet). */
static int check_format(kv_db *db, char *err, size_t errlen) {
  int64_t app = pragma_int(db, "PRAGMA application_id");
  int64_t ver = pragma_int(db, "PRAGMA user_version"), ntab;
  const char *why = NULL;
  if (app == KV_APP_ID && ver == KV_FORMAT) return KV_OK; /* ours: no lock taken */
  if (sqlite3_exec(db->sql, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
    fail(db);
    snprintf(err, errlen, "%s", db->err);
    return KV_ERR;
  }
  app = pragma_int(db, "PRAGMA application_id");
  ver = pragma_int(db, "PRAGMA user_version");
  ntab = pragma_int(db, "SELECT count(*) FROM sqlite_master");
  if (app < 0 || ver < 0 || ntab < 0) {
    fail(db);
    why = db->err;
  } else if (app == KV_APP_ID && ver == KV_FORMAT) {
    /* marked by another connection meanwhile */
  } else if (ntab > 0 || app != 0 || ver != 0) {
    fail_msg(db, KV_EOTHER, "");
    snprintf(err, errlen, "not an otskit store of format %d (application_id %lld, user_version %lld)",
             KV_FORMAT, (long long)app, (long long)ver);
    sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return KV_ERR;
  } else if (sqlite3_exec(db->sql, "PRAGMA application_id=1869902699; PRAGMA user_version=1;",
                          NULL, NULL, NULL) != SQLITE_OK) {
    fail(db);
    why = db->err;
  }
  if (why == NULL && sqlite3_exec(db->sql, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    fail(db);
    why = db->err;
  }
  if (why != NULL) {
    snprintf(err, errlen, "%s", why);
    sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return KV_ERR;
  }
  return KV_OK;
}

/* KV_OK when path (len bytes) names a file or ":memory:", else
 * KV_BADPATH and the reason in err. SQLite has no open flag that turns
 * URI parsing off: SQLITE_OPEN_URI (never passed here) turns it on, and a
 * library built with SQLITE_USE_URI=1 (Debian's is) parses every name
 * starting with "file:" as a URI whatever the flags ("file:x?mode=ro",
 * "file::memory:?cache=shared", "file:/etc/x?vfs=..."). So such names
 * never reach sqlite3_open_v2; a file really called that is opened as
 * "./file:...". A NUL byte would cut the name short in C. */
static int check_path(const char *path, size_t len, char *err, size_t errlen) {
  static const char uri[] = "file:";
  size_t i;
  if (memchr(path, '\0', len) != NULL) {
    snprintf(err, errlen, "the path holds a NUL byte");
    return KV_BADPATH;
  }
  if (len == 0) {
    snprintf(err, errlen, "the path is empty");
    return KV_BADPATH;
  }
  for (i = 0; i < 5 && i < len; i++)
    if (tolower((unsigned char)path[i]) != uri[i]) break;
  if (i == 5) {
    snprintf(err, errlen, "SQLite URIs (\"file:...\") are refused: name the file as \"./file:...\" or by its path");
    return KV_BADPATH;
  }
  return KV_OK;
}

int kv_open(const char *path, size_t len, int busy_ms, kv_db **out, char *err, size_t errlen) {
  kv_db *db;
  struct stat st;
  int rc, fresh;
  *out = NULL;
  if (path == NULL) { snprintf(err, errlen, "no path"); return KV_BADPATH; }
  if (check_path(path, len, err, errlen) != KV_OK) return KV_BADPATH;
  fresh = stat(path, &st) != 0 || st.st_size == 0;
  db = calloc(1, sizeof *db);
  if (db == NULL) { snprintf(err, errlen, "out of memory"); return KV_ERR; }
  /* no SQLITE_OPEN_URI; check_path refused what USE_URI would parse */
  rc = sqlite3_open_v2(path, &db->sql,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    snprintf(err, errlen, "%s", db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc));
    sqlite3_close(db->sql);
    free(db);
    return KV_ERR;
  }
  sqlite3_busy_timeout(db->sql, busy_ms < 0 ? 0 : busy_ms);
  /* WAL + NORMAL: durable at checkpoints, no fsync per autocommit write */
  if (set_wal(db, fresh, busy_ms) != SQLITE_OK ||
      prepare(db->sql, "BEGIN IMMEDIATE", &db->begin) != KV_OK ||
      prepare(db->sql, "BEGIN", &db->begin_read) != KV_OK ||
      prepare(db->sql, "COMMIT", &db->commit) != KV_OK ||
      prepare(db->sql, "ROLLBACK", &db->rollback) != KV_OK ||
      prepare(db->sql, "PRAGMA schema_version", &db->schema) != KV_OK) {
    fail(db);
    snprintf(err, errlen, "%s", db->err);
    kv_close_db(db);
    return KV_ERR;
  }
  if (check_format(db, err, errlen) != KV_OK) {
    kv_close_db(db);
    return KV_ERR;
  }
  *out = db;
  return KV_OK;
}

static void table_free(kv_table *t) {
  int i;
  for (i = 0; i < S_N; i++) sqlite3_finalize(t->st[i]);
  free(t->name);
  free(t);
}

int kv_close_db(kv_db *db) {
  kv_table *t, *tn;
  int rc;
  if (db == NULL) return KV_OK;
  while (db->cursors) kv_cursor_close(db->cursors);
  for (t = db->tables; t; t = tn) { tn = t->next; table_free(t); }
  sqlite3_finalize(db->begin);
  sqlite3_finalize(db->begin_read);
  sqlite3_finalize(db->commit);
  sqlite3_finalize(db->rollback);
  sqlite3_finalize(db->schema);
  if (db->ext_free) db->ext_free(db->ext);
  /* v2: a statement another owner still holds keeps the connection alive
   * until that owner finalizes it (a garbage-collected language's order) */
  rc = sqlite3_close_v2(db->sql);
  free(db->buf);
  free(db);
  return rc == SQLITE_OK ? KV_OK : KV_ERR;
}

void *kv_sqlite(kv_db *db) { return db->sql; }
void *kv_get_ext(kv_db *db) { return db->ext; }
void kv_set_ext(kv_db *db, void *p, void (*fn)(void *)) { db->ext = p; db->ext_free = fn; }

const char *kv_errmsg(kv_db *db) { return db->err[0] ? db->err : sqlite3_errmsg(db->sql); }
int kv_errclass(kv_db *db) { return db->errclass; }
void kv_busy_timeout(kv_db *db, int ms) { sqlite3_busy_timeout(db->sql, ms < 0 ? 0 : ms); }

int kv_integrity(kv_db *db) {
  sqlite3_stmt *s;
  int rc;
  if (sqlite3_prepare_v2(db->sql, "PRAGMA integrity_check", -1, &s, NULL) != SQLITE_OK) return fail(db);
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    const char *r = (const char *)sqlite3_column_text(s, 0);
    if (r == NULL || strcmp(r, "ok") != 0) {
      char msg[200];
      snprintf(msg, sizeof msg, "integrity check: %s", r ? r : "(no answer)");
      sqlite3_finalize(s);
      return fail_msg(db, KV_ECORRUPT, msg);
    }
    sqlite3_finalize(s);
    return KV_OK;
  }
  fail(db);
  sqlite3_finalize(s);
  return KV_ERR;
}

int64_t kv_max_pages(kv_db *db, int64_t n) {
  char q[64];
  snprintf(q, sizeof q, "PRAGMA max_page_count=%lld", (long long)n);
  return pragma_int(db, q);
}

int64_t kv_schema_version(kv_db *db) {
  int64_t v = -1;
  sqlite3_reset(db->schema);
  if (sqlite3_step(db->schema) == SQLITE_ROW) v = sqlite3_column_int64(db->schema, 0);
  else fail(db);
  sqlite3_reset(db->schema);
  return v;
}

static sqlite3_stmt *stmt(kv_table *t, int which) {
  if (t->st[which] == NULL) {
    char *text = sqlite3_mprintf(stmt_sql[which], t->name);
    if (text == NULL) { fail_msg(t->db, KV_EOTHER, "out of memory"); return NULL; }
    if (prepare(t->db->sql, text, &t->st[which]) != KV_OK) fail(t->db);
    sqlite3_free(text);
  }
  return t->st[which];
}

kv_table *kv_table_get(kv_db *db, const char *name, int create, int *found) {
  kv_table *t;
  char *text;
  int rc;
  *found = 1;
  for (t = db->tables; t; t = t->next)
    if (strcmp(t->name, name) == 0) return t;
  if (create) {
    text = sqlite3_mprintf("CREATE TABLE IF NOT EXISTS \"%w\" "
                           "(key BLOB PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID", name);
    if (text == NULL) { fail_msg(db, KV_EOTHER, "out of memory"); return NULL; }
    rc = sqlite3_exec(db->sql, text, NULL, NULL, NULL);
    sqlite3_free(text);
    if (rc != SQLITE_OK) { fail(db); return NULL; }
  } else {
    sqlite3_stmt *q;
    if (prepare(db->sql, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", &q) != KV_OK) {
      fail(db);
      return NULL;
    }
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) fail(db);
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE) { *found = 0; return NULL; }
    if (rc != SQLITE_ROW) return NULL;
  }
  t = calloc(1, sizeof *t);
  if (t == NULL) { fail_msg(db, KV_EOTHER, "out of memory"); return NULL; }
  t->name = malloc(strlen(name) + 1);
  if (t->name == NULL) { free(t); fail_msg(db, KV_EOTHER, "out of memory"); return NULL; }
  strcpy(t->name, name);
  t->db = db;
  t->next = db->tables;
  db->tables = t;
  return t;
}

int kv_table_drop(kv_db *db, const char *name) {
  kv_table **p, *t;
  char *text;
  int rc;
  kv_cursor *c, *cn;
  for (p = &db->tables; *p; p = &(*p)->next) {
    if (strcmp((*p)->name, name) == 0) {
      t = *p;
      /* cursors over the table hold its statements: close them first */
      for (c = db->cursors; c; c = cn) {
        cn = c->next;
        if (c->table == t) kv_cursor_close(c);
      }
      *p = t->next;
      table_free(t);
      break;
    }
  }
  text = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\"", name);
  if (text == NULL) return fail_msg(db, KV_EOTHER, "out of memory");
  rc = sqlite3_exec(db->sql, text, NULL, NULL, NULL);
  sqlite3_free(text);
  return rc == SQLITE_OK ? KV_OK : fail(db);
}

/* blobs of length 0 must still bind as blobs (x''), not NULL */
static int bind_blob(sqlite3_stmt *s, int i, const void *p, size_t n) {
  static const char empty[1] = {0};
  return sqlite3_bind_blob64(s, i, n ? p : empty, (sqlite3_uint64)n, SQLITE_STATIC);
}

int kv_get(kv_table *t, const void *key, size_t klen, const void **val,
           size_t *vlen) {
  sqlite3_stmt *s = stmt(t, S_GET);
  int rc;
  if (s == NULL) return KV_ERR;
  sqlite3_reset(s);
  bind_blob(s, 1, key, klen);
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    *val = sqlite3_column_blob(s, 0);
    *vlen = (size_t)sqlite3_column_bytes(s, 0);
    if (*val == NULL) *val = "";
    if (verify(t->db, key, klen, *val, vlen) != KV_OK) { sqlite3_reset(s); return KV_ERR; }
    return KV_OK;
  }
  if (rc != SQLITE_DONE) fail(t->db);
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? KV_NOTFOUND : KV_ERR;
}

void kv_get_done(kv_table *t) {
  if (t->st[S_GET]) sqlite3_reset(t->st[S_GET]);
}

/* Runs statement `which` (S_PUT: insert or replace; S_INS: insert if
 * new) with key and the sealed value: KV_OK or KV_ERR. */
static int write_sealed(kv_table *t, int which, const void *key, size_t klen,
                        const void *val, size_t vlen) {
  sqlite3_stmt *s = stmt(t, which);
  const void *sealed;
  int rc;
  if (s == NULL) return KV_ERR;
  sealed = seal(t->db, key, klen, val, vlen);
  if (sealed == NULL) return fail_msg(t->db, KV_EOTHER, "out of memory");
  sqlite3_reset(s);
  bind_blob(s, 1, key, klen);
  bind_blob(s, 2, sealed, vlen + SUM_LEN);
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) fail(t->db);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  return rc == SQLITE_DONE ? KV_OK : KV_ERR;
}

int kv_put(kv_table *t, const void *key, size_t klen, const void *val,
           size_t vlen) {
  return write_sealed(t, S_PUT, key, klen, val, vlen);
}

int kv_swap(kv_table *t, const void *key, size_t klen, const void *val,
            size_t vlen, int64_t *oldlen) {
  const void *ov;
  size_t ol;
  /* new keys (the common case in loads) cost one statement */
  int rc = write_sealed(t, S_INS, key, klen, val, vlen);
  if (rc != KV_OK) return rc;
  if (sqlite3_changes(t->db->sql) > 0) { *oldlen = -1; return KV_OK; }
  rc = kv_get(t, key, klen, &ov, &ol);
  kv_get_done(t);
  if (rc == KV_NOTFOUND) return fail_msg(t->db, KV_EOTHER, "row vanished during a write");
  *oldlen = (int64_t)ol;
  return kv_put(t, key, klen, val, vlen);
}

int kv_del(kv_table *t, const void *key, size_t klen) {
  sqlite3_stmt *s = stmt(t, S_DEL);
  int rc;
  if (s == NULL) return KV_ERR;
  sqlite3_reset(s);
  bind_blob(s, 1, key, klen);
  rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) fail(t->db);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc != SQLITE_DONE) return KV_ERR;
  return sqlite3_changes(t->db->sql) > 0 ? KV_OK : KV_NOTFOUND;
}

int64_t kv_count(kv_table *t) {
  sqlite3_stmt *s = stmt(t, S_COUNT);
  int64_t n = -1;
  if (s == NULL) return -1;
  sqlite3_reset(s);
  if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int64(s, 0);
  else fail(t->db);
  sqlite3_reset(s);
  return n;
}

static void cursor_link(kv_db *db, kv_cursor *c) {
  c->db = db;
  c->prev = NULL;
  c->next = db->cursors;
  if (db->cursors) db->cursors->prev = c;
  db->cursors = c;
}

int kv_scan(kv_table *t, kv_cursor *c, const void *lo, size_t lolen,
            const void *hi, size_t hilen, int reverse, int64_t limit) {
  int which = reverse ? (hi ? S_REV : S_REV_OPEN) : (hi ? S_FWD : S_FWD_OPEN);
  sqlite3_stmt *s;
  memset(c, 0, sizeof *c);
  if (!t->busy[which]) {
    s = stmt(t, which);
    if (s == NULL) return KV_ERR;
    t->busy[which] = 1;
    c->busy = &t->busy[which];
  } else {
    /* the cached statement is in use by another cursor: a private one */
    char *text = sqlite3_mprintf(stmt_sql[which], t->name);
    if (text == NULL) return fail_msg(t->db, KV_EOTHER, "out of memory");
    s = NULL;
    prepare(t->db->sql, text, &s);
    sqlite3_free(text);
    if (s == NULL) return fail(t->db);
    c->owned = 1;
  }
  sqlite3_reset(s);
  bind_blob(s, 1, lo ? lo : "", lo ? lolen : 0);
  if (hi) bind_blob(s, 2, hi, hilen);
  sqlite3_bind_int64(s, 3, limit < 0 ? -1 : limit);
  c->stmt = s;
  c->table = t;
  cursor_link(t->db, c);
  return KV_OK;
}

int kv_next(kv_cursor *c, const void **key, size_t *klen, const void **val,
            size_t *vlen) {
  sqlite3_stmt *s = c->stmt;
  int rc;
  if (c->db == NULL || s == NULL) return KV_DONE;
  if (c->ended) return fail_msg(c->db, KV_EOTHER, "the scan's transaction was rolled back");
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    *key = sqlite3_column_blob(s, 0);
    *klen = (size_t)sqlite3_column_bytes(s, 0);
    *val = sqlite3_column_blob(s, 1);
    *vlen = (size_t)sqlite3_column_bytes(s, 1);
    if (*key == NULL) *key = "";
    if (*val == NULL) *val = "";
    return verify(c->db, *key, *klen, *val, vlen) == KV_OK ? KV_ROW : KV_ERR;
  }
  if (rc == SQLITE_DONE) {
    /* release the statement early so a finished scan holds no locks */
    kv_cursor_close(c);
    return KV_DONE;
  }
  return fail(c->db);
}

void kv_cursor_close(kv_cursor *c) {
  kv_db *db = c->db;
  if (db == NULL) return;
  if (c->stmt) {
    if (c->owned) sqlite3_finalize((sqlite3_stmt *)c->stmt);
    else {
      sqlite3_reset((sqlite3_stmt *)c->stmt);
      sqlite3_clear_bindings((sqlite3_stmt *)c->stmt);
    }
  }
  if (c->busy) *c->busy = 0;
  if (c->prev) c->prev->next = c->next;
  else db->cursors = c->next;
  if (c->next) c->next->prev = c->prev;
  c->db = NULL;
  c->stmt = NULL;
  c->busy = NULL;
  c->table = NULL;
  c->prev = c->next = NULL;
}

static int run(kv_db *db, sqlite3_stmt *s) {
  int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) fail(db);
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? KV_OK : KV_ERR;
}

int kv_begin(kv_db *db, int write) { return run(db, write ? db->begin : db->begin_read); }
int kv_commit(kv_db *db) { return run(db, db->commit); }
int kv_rollback(kv_db *db) {
  kv_cursor *c;
  for (c = db->cursors; c; c = c->next) {
    if (c->stmt) sqlite3_reset((sqlite3_stmt *)c->stmt);
    c->ended = 1;
  }
  return run(db, db->rollback);
}
int kv_data_version(kv_db *db, unsigned *v) {
  *v = 0;
  return sqlite3_file_control(db->sql, "main", SQLITE_FCNTL_DATA_VERSION, v) == SQLITE_OK;
}
int kv_in_txn(kv_db *db) { return !sqlite3_get_autocommit(db->sql); }
