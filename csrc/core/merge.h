/* merge.h -- k-way merge of sorted sources fed in batches: a loser tree
 * over byte-string keys (memcmp order, shorter prefix first), ties broken
 * by source index, so the output order is deterministic. Plain C: no Lua.
 *
 * Protocol: every source starts "pending". Feed a pending source a batch
 * with merge_begin / merge_add (one key per row) / merge_end; merge_pull
 * then emits (source, row) pairs in order until it must stop. It never
 * emits past the last key a pending source has delivered: a pending source
 * counts as "smaller than every key", so it stops and names that source. */
#ifndef OTSKIT_MERGE_H
#define OTSKIT_MERGE_H

#include <stddef.h>
#include <stdint.h>

#define MERGE_MAX_SOURCES 1024

typedef struct merge merge;

/* One emitted row: source index (0-based) and row index (0-based) within
 * the batch that source was last fed. */
typedef struct merge_item { uint32_t src, row; } merge_item;

typedef enum {
  MERGE_MORE = 0,   /* stopped at max; more can be emitted right away */
  MERGE_NEED = 1,   /* a pending source must be fed first: merge_need() */
  MERGE_END = 2,    /* all sources exhausted, or the limit reached */
  MERGE_ENOMEM = -1
} merge_status;

/* Errors of merge_begin / merge_add / merge_end. */
enum {
  MERGE_OK = 0,
  MERGE_EOOM = -1,      /* out of memory */
  MERGE_ESRC = -2,      /* source index out of range */
  MERGE_ESTATE = -3,    /* source not pending (still has rows, or done) */
  MERGE_EORDER = -4     /* key out of order within the source */
};

/* A merge of k (1..MERGE_MAX_SOURCES) sources; desc reverses the key
 * order (ties still go to the lower source index); dedup emits only the
 * first of equal consecutive keys; limit caps the rows emitted in total
 * (0 = no cap). NULL on bad arguments or out of memory. */
merge *merge_new(int k, int desc, int dedup, uint64_t limit);
void merge_free(merge *m);
/* Makes m a new merge (the arguments of merge_new) that keeps the buffers
 * m grew, so reusing one merge allocates nothing once warm. MERGE_ESRC on
 * a bad k, MERGE_EOOM when more sources cannot be allocated (m is left
 * as it was; free it). */
int merge_reset(merge *m, int k, int desc, int dedup, uint64_t limit);
/* Bytes of memory m holds. */
size_t merge_footprint(const merge *m);

/* Starts a new batch for pending source src (nrows is a capacity hint). */
int merge_begin(merge *m, int src, size_t nrows);
/* Appends the next row's key. Keys must be in the merge order within the
 * source (and after its previous batch): MERGE_EORDER otherwise. */
int merge_add(merge *m, int src, const void *key, size_t len);
/* merge_add of n keys (keys[i], lens[i] bytes) in one call; *added gets
 * the number added before an error (the failing row's index). */
int merge_add_n(merge *m, int src, const char *const *keys, const size_t *lens, size_t n,
                          size_t *added);
/* Hints the CPU to load keys[0..n) soon: the 16 bytes before each (where
 * an interpreter keeps a string's length) and its first 32 bytes. Reads
 * nothing; any pointers may be given. */
void merge_prefetch(const char *const *keys, size_t n);
/* Ends the batch; done says the source has no rows after it. A batch of 0
 * rows with done = 0 leaves the source pending. */
void merge_end(merge *m, int src, int done);
/* Drops a batch started by merge_begin without merge_end (after an error):
 * the source is pending again with no rows. */
void merge_abort(merge *m, int src);

/* Emits up to max items into out; *n gets the count. The status says why
 * it stopped (see merge_status). */
merge_status merge_pull(merge *m, merge_item *out, size_t max, size_t *n);

/* The source that must be fed (valid after MERGE_NEED), else -1. */
int merge_need(const merge *m);
/* State of source src: MERGE_S_PENDING (needs a batch before anything
 * after its last key can be merged), MERGE_S_ROWS (has unmerged rows),
 * MERGE_S_DONE (exhausted); -1 if src is out of range. */
enum { MERGE_S_PENDING = 0, MERGE_S_ROWS = 1, MERGE_S_DONE = 2 };
int merge_state(const merge *m, int src);
/* An upper bound of what the next merge_pull can emit, exact but for
 * equal keys and dedup: the rows up to the last buffered key of the
 * source that runs out first (the limit counted). */
uint64_t merge_bound(const merge *m);
/* Rows emitted so far. */
uint64_t merge_emitted(const merge *m);
/* 1 once every source is exhausted and merged (nothing left). */
int merge_exhausted(const merge *m);
/* Last emitted key and its source (-1 if none yet). Valid until the next
 * merge_pull. */
int merge_last(const merge *m, const unsigned char **key, size_t *len);
int merge_nsources(const merge *m);

#endif
