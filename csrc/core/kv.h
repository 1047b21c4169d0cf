/* kv.h -- an ordered byte-key store on SQLite: named tables of
 * (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID, point reads and writes,
 * range scans both ways over [lo, hi), and transactions. Keys compare as
 * SQLite compares blobs: memcmp, then the shorter first. Prepared
 * statements are cached per table (bytes_cmp of bytes.h is that order).
 * No Lua here. */
#ifndef OTSKIT_KV_H
#define OTSKIT_KV_H

#include <stddef.h>
#include <stdint.h>

enum { KV_OK = 0, KV_NOTFOUND = 1, KV_ROW = 2, KV_DONE = 3, KV_ERR = -1 };

typedef struct kv_db kv_db;
typedef struct kv_table kv_table;

/* A scan in progress. The caller owns the memory (a Lua userdata, a stack
 * variable); kv_scan fills it, kv_close_db closes every open cursor. */
typedef struct kv_cursor {
  kv_db *db;                 /* NULL once closed */
  kv_table *table;
  void *stmt;                /* sqlite3_stmt */
  int owned;                 /* 1: stmt is private, finalize on close */
  int *busy;                 /* the cached statement's in-use flag, or NULL */
  struct kv_cursor *prev, *next;
} kv_cursor;

/* Opens path (":memory:" or a file; created if missing). Returns KV_OK and
 * *out, or KV_ERR with a message copied into err (errlen bytes). */
int kv_open(const char *path, kv_db **out, char *err, size_t errlen);

/* Closes open cursors, finalizes statements, closes SQLite, frees db.
 * Returns KV_OK, or KV_ERR if SQLite refused (the memory is freed anyway). */
int kv_close_db(kv_db *db);

/* The last SQLite error message of db. */
const char *kv_errmsg(kv_db *db);

/* The table named name, created if missing (create != 0) or NULL with
 * *found = 0 if missing. NULL with *found = 1 on SQLite errors. Names are
 * any bytes without NUL; they are quoted, never interpreted. */
kv_table *kv_table_get(kv_db *db, const char *name, int create, int *found);

/* Drops the table and its cached statements. KV_OK or KV_ERR. */
int kv_table_drop(kv_db *db, const char *name);

/* Point read. KV_OK with val and vlen valid until the next call on db,
 * KV_NOTFOUND, or KV_ERR. */
int kv_get(kv_table *t, const void *key, size_t klen, const void **val,
           size_t *vlen);

/* Ends the read of the last kv_get (its value pointer dies), so no
 * statement keeps a read transaction open between calls. */
void kv_get_done(kv_table *t);

/* Inserts or replaces. KV_OK or KV_ERR. */
int kv_put(kv_table *t, const void *key, size_t klen, const void *val,
           size_t vlen);

/* Inserts or replaces, reporting the replaced value's length in *oldlen
 * (-1 if the key was new). KV_OK or KV_ERR. */
int kv_swap(kv_table *t, const void *key, size_t klen, const void *val,
            size_t vlen, int64_t *oldlen);

/* Deletes. KV_OK if a row was deleted, KV_NOTFOUND if none, or KV_ERR. */
int kv_del(kv_table *t, const void *key, size_t klen);

/* Number of rows in the table, or -1 on error. */
int64_t kv_count(kv_table *t);

/* Starts a scan of keys in [lo, hi) (hi NULL: no upper bound), ascending
 * or (reverse != 0) descending, at most limit rows (limit < 0: all).
 * Returns KV_OK or KV_ERR. */
int kv_scan(kv_table *t, kv_cursor *c, const void *lo, size_t lolen,
            const void *hi, size_t hilen, int reverse, int64_t limit);

/* The next row: KV_ROW with key/val valid until the next call on c,
 * KV_DONE at the end (the cursor stays open), or KV_ERR. */
int kv_next(kv_cursor *c, const void **key, size_t *klen, const void **val,
            size_t *vlen);

/* Closes the cursor; idempotent. */
void kv_cursor_close(kv_cursor *c);

/* Transactions: BEGIN IMMEDIATE, COMMIT, ROLLBACK. KV_OK or KV_ERR.
 * kv_in_txn says whether one is open. */
int kv_begin(kv_db *db);
int kv_commit(kv_db *db);
int kv_rollback(kv_db *db);
int kv_in_txn(kv_db *db);

#endif
