/* kv.h -- an ordered byte-key store on SQLite: named tables of
 * (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID, point reads and writes,
 * range scans both ways over [lo, hi), and transactions. Keys compare as
 * SQLite compares blobs: memcmp, then the shorter first. Prepared
 * statements are cached per table (bytes_cmp of bytes.h is that order).
 * No Lua here.
 *
 * Every stored value carries an 8-byte trailer, the xxh3 of the key and
 * the value: a read whose row does not match it fails (KV_ECORRUPT)
 * instead of returning damaged bytes. The file is marked with an
 * application id and format version; a file without them that already
 * holds tables is refused. Lock contention waits up to a busy timeout
 * (default KV_BUSY_MS) and then fails with KV_EBUSY. */
#ifndef OTSKIT_KV_H
#define OTSKIT_KV_H

#include <stddef.h>
#include <stdint.h>

enum { KV_OK = 0, KV_NOTFOUND = 1, KV_ROW = 2, KV_DONE = 3, KV_ERR = -1, KV_BADPATH = -2 };

/* What kind of failure the last KV_ERR was (kv_errclass). */
enum { KV_EOTHER = 0, KV_EBUSY = 1, KV_ECORRUPT = 2, KV_EFULL = 3, KV_ENOTABLE = 4 };

enum { KV_BUSY_MS = 5000 };

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
  int ended;                 /* 1: its transaction was rolled back */
  struct kv_cursor *prev, *next;
} kv_cursor;

/* Opens the len bytes at path (":memory:" or a file name; the file is
 * created if missing) with a busy timeout of busy_ms (see
 * kv_busy_timeout). A name is always a file name, never an SQLite URI:
 * one holding a NUL byte, or starting with "file:" (any case), is refused
 * with KV_BADPATH before SQLite sees it. Returns KV_OK and *out, or
 * KV_BADPATH / KV_ERR with a message copied into err (errlen bytes). */
int kv_open(const char *path, size_t len, int busy_ms, kv_db **out, char *err, size_t errlen);

/* Closes open cursors, finalizes statements, closes SQLite, frees db.
 * Returns KV_OK, or KV_ERR if SQLite refused (the memory is freed anyway). */
int kv_close_db(kv_db *db);

/* The message and class (KV_E*) of the last failure on db. */
const char *kv_errmsg(kv_db *db);
int kv_errclass(kv_db *db);

/* How long a statement waits for another connection's lock before it
 * fails with KV_EBUSY (ms, >= 0). */
void kv_busy_timeout(kv_db *db, int ms);

/* SQLite's PRAGMA integrity_check: KV_OK, or KV_ERR (class KV_ECORRUPT
 * with the first problem as the message, or another failure). */
int kv_integrity(kv_db *db);

/* Caps the file at n pages (PRAGMA max_page_count): writes past it fail
 * with KV_EFULL, as on a full disk. Returns the cap now in force or -1. */
int64_t kv_max_pages(kv_db *db, int64_t n);

/* The schema cookie (changes with every CREATE/DROP by any connection),
 * or -1 on error. */
int64_t kv_schema_version(kv_db *db);

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

/* Transactions: BEGIN IMMEDIATE (write != 0: takes the write lock now, so
 * a read-modify-write cannot interleave with another connection's) or
 * BEGIN (deferred: a read snapshot), COMMIT, ROLLBACK. KV_OK or KV_ERR.
 * kv_in_txn says whether one is open. A rollback ends every open cursor
 * (kv_next on one then fails): a cursor left open by an error raised
 * mid-scan would otherwise keep the rolled-back transaction's read
 * snapshot, and the next BEGIN IMMEDIATE fail busy once another
 * connection wrote. */
int kv_begin(kv_db *db, int write);
int kv_commit(kv_db *db);
int kv_rollback(kv_db *db);
int kv_in_txn(kv_db *db);

/* The data version of db's main file as of the last read transaction it
 * began (its snapshot) into *v: it changes whenever that file's content
 * changed since -- a commit of this connection or of any other. No I/O.
 * 1, or 0 when this SQLite cannot tell (then *v means nothing). */
int kv_data_version(kv_db *db, unsigned *v);

/* The SQLite connection (a sqlite3 *), for a part that runs its own SQL
 * on the same connection and so inside the same transactions (kvsql.c). */
void *kv_sqlite(kv_db *db);

/* One extension's state on db: kv_close_db calls fn(p) before it closes
 * SQLite (finalize statements there). kv_get_ext: p, or NULL. */
void kv_set_ext(kv_db *db, void *p, void (*fn)(void *));
void *kv_get_ext(kv_db *db);

#endif
