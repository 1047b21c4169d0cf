/* sqlvt.h -- the SQLite virtual table module "otskit_map" that lets SQLite
 * evaluate SELECT statements over the store's tables (the SQL mapping
 * tables of otskit.store.sql). The store stays the source of truth: a
 * mapping table holds nothing, each scan reads the kv table through kv.h.
 *
 *   CREATE VIRTUAL TABLE temp.name USING otskit_map(kHEX, tTTL, COL...)
 *     HEX     the kv table's name, hex-encoded
 *     TTL     the table's time to live in ms (-1: none): older cells are
 *             not seen (the store's get_range rule)
 *     COL     "NAME KIND PKPOS", KIND one of i (BIGINT), s (TEXT), b (BLOB),
 *             d (DOUBLE), t (BOOL); PKPOS the primary-key position (1..),
 *             0 for an attribute column. NAME is [A-Za-z_][A-Za-z0-9_]*.
 *
 * xBestIndex turns equality on a primary-key prefix and a range on the
 * next key column (=, <, <=, >, >=) into one range read of the kv table
 * ([lo, hi) of the tuple encoding), not a full scan, and consumes an
 * ORDER BY over a key prefix in one direction (a backward read for DESC).
 * The constraints are still checked by SQLite (the range is a superset).
 * A cell whose stored type is not the column's kind reads as NULL; the
 * newest version of a column is its value.
 *
 * Every row read from the store counts against the state's quota: the
 * read past it fails the statement and sets st->over_quota. No Lua here. */
#ifndef OTSKIT_SQLVT_H
#define OTSKIT_SQLVT_H

#include <stdint.h>
#include <sqlite3.h>
#include "kv.h"

typedef struct sqlvt_state {
  kv_db *db;
  int64_t scanned;       /* rows read from the store since the last reset */
  int64_t quota;         /* at most this many (< 0: no limit) */
  int64_t now_ms;        /* the clock for time_to_live */
  int over_quota;        /* 1 once a read went past the quota */
  int64_t range_reads;   /* xFilter calls that read a key range (not all) */
  int64_t full_scans;    /* xFilter calls that read the whole table */
  /* the caller's: a statement being stepped (finalized by the next call
   * if an error unwound the last one), and its time limit */
  sqlite3_stmt *stmt;
  int64_t timeout_ms;
  int timed_out;
} sqlvt_state;

/* Registers the module on db's connection with st (owned by the caller,
 * alive as long as the connection). SQLITE_OK or an SQLite code. */
int sqlvt_register(kv_db *db, sqlvt_state *st);

/* The authorizer for a user's statement: reads of the temp schema's
 * tables, SELECT, recursive CTEs and the functions of sqlvt_fn_allowed;
 * everything else is denied. pArg is unused. */
int sqlvt_authorize(void *arg, int action, const char *a, const char *b, const char *dbname,
                    const char *trigger);

/* 1 if name (any case) is a function a SELECT may call. */
int sqlvt_fn_allowed(const char *name);

#endif
