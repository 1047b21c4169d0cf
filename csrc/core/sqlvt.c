/* sqlvt.c -- see sqlvt.h. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "row.h"
#include "sqlvt.h"
#include "tuple.h"
#include "bytes.h"

enum { MAXCOLS = 1024 };

typedef struct {
  char *name;
  size_t name_len;
  int kind;  /* 'i' 's' 'b' 'd' 't' */
  int pkpos; /* 1.. or 0 */
} vcol;

typedef struct {
  sqlite3_vtab base;
  sqlvt_state *st;
  char *kvname;
  int64_t ttl_ms;
  int ncol, npk;
  vcol *cols;
  int *pkcol; /* pkcol[p] = column index of key position p (0-based) */
} vtab;

typedef struct {
  sqlite3_vtab_cursor base;
  kv_cursor kc;
  int open, eof;
  int64_t rowid;
  const unsigned char *key, *val;
  size_t klen, vlen;
  tuple_item *pk;   /* npk decoded key elements */
  row_cell *cells;  /* ncol: the newest live cell of each column, type 0 if none */
  unsigned char *lo, *hi;
} vcursor;

static const char *KINDS = "isbdt";

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static void vt_free(vtab *v) {
  int i;
  if (v == NULL) return;
  for (i = 0; i < v->ncol; i++) sqlite3_free(v->cols[i].name);
  sqlite3_free(v->cols);
  sqlite3_free(v->pkcol);
  sqlite3_free(v->kvname);
  sqlite3_free(v);
}

static int bad(char **err, const char *msg, vtab *v) {
  *err = sqlite3_mprintf("otskit_map: %s", msg);
  vt_free(v);
  return SQLITE_ERROR;
}

static const char *decl_type(int kind) {
  switch (kind) {
  case 'i': return "BIGINT";
  case 's': return "TEXT";
  case 'b': return "BLOB";
  case 'd': return "DOUBLE";
  default: return "BOOL";
  }
}

static int x_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                     char **err) {
  vtab *v;
  int i, rc;
  size_t hl;
  sqlite3_str *s;
  char *sql;
  if (argc < 6) return bad(err, "needs the kv table, the ttl and at least one column", NULL);
  if (argc - 5 > MAXCOLS) return bad(err, "too many columns", NULL);
  v = (vtab *)sqlite3_malloc(sizeof *v);
  if (v == NULL) return SQLITE_NOMEM;
  memset(v, 0, sizeof *v);
  v->st = (sqlvt_state *)aux;
  if (argv[3][0] != 'k' || argv[4][0] != 't') return bad(err, "expected kHEX, tTTL", v);
  hl = strlen(argv[3] + 1);
  if (hl % 2 != 0 || hl == 0) return bad(err, "the kv table is not hex", v);
  v->kvname = (char *)sqlite3_malloc((int)(hl / 2 + 1));
  if (v->kvname == NULL) { vt_free(v); return SQLITE_NOMEM; }
  for (i = 0; (size_t)i < hl / 2; i++) {
    int h = hexval(argv[3][1 + 2 * i]), l = hexval(argv[3][2 + 2 * i]);
    if (h < 0 || l < 0 || (h == 0 && l == 0)) return bad(err, "the kv table is not hex", v);
    v->kvname[i] = (char)(h * 16 + l);
  }
  v->kvname[hl / 2] = 0;
  {
    char *end;
    long long t = strtoll(argv[4] + 1, &end, 10);
    if (*end != 0 || end == argv[4] + 1) return bad(err, "the ttl is not an integer", v);
    v->ttl_ms = (int64_t)t;
  }
  v->ncol = 0;
  v->cols = (vcol *)sqlite3_malloc((int)(sizeof(vcol) * (size_t)(argc - 5)));
  v->pkcol = (int *)sqlite3_malloc((int)(sizeof(int) * (size_t)(argc - 5)));
  if (v->cols == NULL || v->pkcol == NULL) { vt_free(v); return SQLITE_NOMEM; }
  for (i = 5; i < argc; i++) {
    const char *a = argv[i], *c1 = strchr(a, ' '), *c2;
    vcol *c = &v->cols[v->ncol];
    size_t j, nl;
    char *end;
    long p;
    if (c1 == NULL || c1 == a) return bad(err, "a column is not NAME:KIND:PKPOS", v);
    c2 = strchr(c1 + 1, ' ');
    if (c2 != c1 + 2 || strchr(KINDS, c1[1]) == NULL || c1[1] == 0) return bad(err, "a column has no kind", v);
    nl = (size_t)(c1 - a);
    for (j = 0; j < nl; j++) {
      unsigned char ch = (unsigned char)a[j];
      if (!(isalnum(ch) || ch == '_') || (j == 0 && isdigit(ch))) return bad(err, "a column name is not valid", v);
    }
    p = strtol(c2 + 1, &end, 10);
    if (*end != 0 || end == c2 + 1 || p < 0 || p > MAXCOLS) return bad(err, "a column has no key position", v);
    c->name = sqlite3_mprintf("%.*s", (int)nl, a);
    if (c->name == NULL) { vt_free(v); return SQLITE_NOMEM; }
    c->name_len = nl;
    c->kind = c1[1];
    c->pkpos = (int)p;
    v->ncol++;
    if (p > 0) v->npk++;
  }
  for (i = 0; i < v->npk; i++) v->pkcol[i] = -1;
  for (i = 0; i < v->ncol; i++) {
    int p = v->cols[i].pkpos;
    if (p == 0) continue;
    if (p > v->npk || v->pkcol[p - 1] != -1) return bad(err, "the key positions are not 1..n", v);
    if (v->cols[i].kind != 'i' && v->cols[i].kind != 's' && v->cols[i].kind != 'b')
      return bad(err, "a key column must be BIGINT, TEXT or BLOB", v);
    v->pkcol[p - 1] = i;
  }
  if (v->npk == 0) return bad(err, "no primary-key column", v);
  s = sqlite3_str_new(db);
  sqlite3_str_appendall(s, "CREATE TABLE x(");
  for (i = 0; i < v->ncol; i++)
    sqlite3_str_appendf(s, "%s\"%w\" %s", i ? ", " : "", v->cols[i].name, decl_type(v->cols[i].kind));
  sqlite3_str_appendall(s, ")");
  sql = sqlite3_str_finish(s);
  if (sql == NULL) { vt_free(v); return SQLITE_NOMEM; }
  rc = sqlite3_declare_vtab(db, sql);
  sqlite3_free(sql);
  if (rc != SQLITE_OK) return bad(err, "bad column list", v);
  *out = &v->base;
  return SQLITE_OK;
}

static int x_disconnect(sqlite3_vtab *b) {
  vt_free((vtab *)b);
  return SQLITE_OK;
}

/* idxStr: one letter a consumed constraint, in argv order:
 *   E<p> equality on key position p (the first ones, in order)
 *   L / G  the upper (<, <=) / lower (>, >=) bound of the next position,
 *   with the operator letter after it: 'l' <, 'L' <=, 'g' >, 'G' >=.
 * idxNum bit 0: read backwards (ORDER BY the key, DESC). */
static int x_bestindex(sqlite3_vtab *b, sqlite3_index_info *ix) {
  vtab *v = (vtab *)b;
  int p, i, argn = 0, eqs = 0, ranged = 0;
  char *plan = sqlite3_malloc(4 * ix->nConstraint + 2);
  size_t pl = 0;
  if (plan == NULL) return SQLITE_NOMEM;
  for (p = 0; p < v->npk; p++) {
    int col = v->pkcol[p], eq = -1;
    for (i = 0; i < ix->nConstraint; i++) {
      const struct sqlite3_index_constraint *c = &ix->aConstraint[i];
      if (c->usable && c->iColumn == col && c->op == SQLITE_INDEX_CONSTRAINT_EQ) { eq = i; break; }
    }
    if (eq >= 0) {
      ix->aConstraintUsage[eq].argvIndex = ++argn;
      plan[pl++] = 'E';
      eqs++;
      continue;
    }
    {
      int lo = -1, hi = -1;
      for (i = 0; i < ix->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &ix->aConstraint[i];
        if (!c->usable || c->iColumn != col) continue;
        if ((c->op == SQLITE_INDEX_CONSTRAINT_GT || c->op == SQLITE_INDEX_CONSTRAINT_GE) && lo < 0) lo = i;
        if ((c->op == SQLITE_INDEX_CONSTRAINT_LT || c->op == SQLITE_INDEX_CONSTRAINT_LE) && hi < 0) hi = i;
      }
      if (lo >= 0) {
        ix->aConstraintUsage[lo].argvIndex = ++argn;
        plan[pl++] = 'G';
        plan[pl++] = ix->aConstraint[lo].op == SQLITE_INDEX_CONSTRAINT_GT ? 'g' : 'G';
        ranged = 1;
      }
      if (hi >= 0) {
        ix->aConstraintUsage[hi].argvIndex = ++argn;
        plan[pl++] = 'L';
        plan[pl++] = ix->aConstraint[hi].op == SQLITE_INDEX_CONSTRAINT_LT ? 'l' : 'L';
        ranged = 1;
      }
    }
    break;
  }
  plan[pl] = 0;
  ix->idxStr = plan;
  ix->needToFreeIdxStr = 1;
  ix->idxNum = 0;
  /* ORDER BY a key prefix, all one direction: the read's own order */
  if (ix->nOrderBy > 0 && ix->nOrderBy <= v->npk) {
    int desc = ix->aOrderBy[0].desc, ok = 1;
    for (i = 0; i < ix->nOrderBy; i++)
      if (ix->aOrderBy[i].iColumn != v->pkcol[i] || ix->aOrderBy[i].desc != desc) ok = 0;
    if (ok) {
      ix->orderByConsumed = 1;
      ix->idxNum = desc ? 1 : 0;
    }
  }
  if (eqs == v->npk) {
    ix->estimatedCost = 1.0;
    ix->estimatedRows = 1;
  } else if (eqs > 0 || ranged) {
    ix->estimatedCost = 1000.0 / (double)(1 + eqs * 4 + ranged);
    ix->estimatedRows = 1000 / (1 + eqs * 4 + ranged);
  } else {
    ix->estimatedCost = 1e6;
    ix->estimatedRows = 1000000;
  }
  return SQLITE_OK;
}

static int x_open(sqlite3_vtab *b, sqlite3_vtab_cursor **out) {
  vtab *v = (vtab *)b;
  vcursor *c = (vcursor *)sqlite3_malloc(sizeof *c);
  if (c == NULL) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->pk = (tuple_item *)sqlite3_malloc((int)(sizeof(tuple_item) * (size_t)v->npk));
  c->cells = (row_cell *)sqlite3_malloc((int)(sizeof(row_cell) * (size_t)v->ncol));
  if (c->pk == NULL || c->cells == NULL) {
    sqlite3_free(c->pk);
    sqlite3_free(c->cells);
    sqlite3_free(c);
    return SQLITE_NOMEM;
  }
  *out = &c->base;
  return SQLITE_OK;
}

static void cur_reset(vcursor *c) {
  if (c->open) kv_cursor_close(&c->kc);
  c->open = 0;
  free(c->lo);
  free(c->hi);
  c->lo = c->hi = NULL;
}

static int x_close(sqlite3_vtab_cursor *b) {
  vcursor *c = (vcursor *)b;
  cur_reset(c);
  sqlite3_free(c->pk);
  sqlite3_free(c->cells);
  sqlite3_free(c);
  return SQLITE_OK;
}

static int vt_error(sqlite3_vtab *b, const char *fmt, const char *arg) {
  sqlite3_free(b->zErrMsg);
  b->zErrMsg = sqlite3_mprintf(fmt, arg);
  return SQLITE_ERROR;
}

/* Appends value a as key element of kind k to t. 1 if written; 0 when the
 * value does not bound the column (another type, a NaN): the bound is
 * then dropped (a wider read). For a REAL on an integer key, *adj is set
 * to the integer bound to use, already rounded outwards by the caller. */
static int put_elem(tuple_buf *t, int kind, sqlite3_value *a, int lower) {
  int vt = sqlite3_value_type(a);
  if (kind == 'i') {
    if (vt == SQLITE_INTEGER) return tuple_put_int(t, (int64_t)sqlite3_value_int64(a)) == 0;
    if (vt == SQLITE_FLOAT) {
      double d = sqlite3_value_double(a), r = lower ? floor(d) : ceil(d);
      if (!(r >= -9.2e18 && r <= 9.2e18)) return 0;
      return tuple_put_int(t, (int64_t)r) == 0;
    }
    return 0;
  }
  if (kind == 's' && vt == SQLITE_TEXT)
    return tuple_put_bytes(t, sqlite3_value_text(a), (size_t)sqlite3_value_bytes(a)) == 0;
  if (kind == 'b' && vt == SQLITE_BLOB) {
    const void *p = sqlite3_value_blob(a);
    return tuple_put_bytes(t, p ? p : "", (size_t)sqlite3_value_bytes(a)) == 0;
  }
  return 0;
}

/* The smallest byte string above every string that starts with s[0..n):
 * written over s, its length returned; 0 when there is none. */
static size_t successor(unsigned char *s, size_t n) {
  while (n > 0 && s[n - 1] == 0xff) n--;
  if (n == 0) return 0;
  s[n - 1]++;
  return n;
}

static unsigned char *dup(const unsigned char *s, size_t n) {
  unsigned char *d = (unsigned char *)malloc(n ? n : 1);
  if (d && n) memcpy(d, s, n);
  return d;
}

static int row_load(vcursor *c, vtab *v);

static int advance(vcursor *c, vtab *v) {
  for (;;) {
    int rc = kv_next(&c->kc, (const void **)&c->key, &c->klen, (const void **)&c->val, &c->vlen);
    if (rc == KV_DONE) { c->eof = 1; return SQLITE_OK; }
    if (rc != KV_ROW) return vt_error(c->base.pVtab, "otskit_map: reading the store: %s", kv_errmsg(v->st->db));
    if (v->st->quota >= 0 && v->st->scanned >= v->st->quota) {
      v->st->over_quota = 1;
      return vt_error(c->base.pVtab, "%s", "the sql scanned rows of kv exceeds the quota");
    }
    v->st->scanned++;
    rc = row_load(c, v);
    if (rc < 0) return vt_error(c->base.pVtab, "otskit_map: %s", "the store file is damaged: a stored row does not decode");
    if (rc == 1) { c->rowid++; return SQLITE_OK; }
  }
}

/* prefix + element of a into *out (malloc'ed) -> length, or 0 when the
 * value does not bound the column; -1 when out of memory. */
static long bound(const tuple_buf *pre, int kind, sqlite3_value *a, int lower, unsigned char **out) {
  tuple_buf e;
  unsigned char *m;
  size_t n;
  tuple_buf_init(&e);
  if (!put_elem(&e, kind, a, lower)) { tuple_buf_free(&e); return 0; }
  n = pre->len + e.len;
  m = (unsigned char *)malloc(n);
  if (m == NULL) { tuple_buf_free(&e); return -1; }
  if (pre->len) memcpy(m, pre->p, pre->len);
  memcpy(m + pre->len, e.p, e.len);
  tuple_buf_free(&e);
  *out = m;
  return (long)n;
}

static int x_filter(sqlite3_vtab_cursor *b, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  vcursor *c = (vcursor *)b;
  vtab *v = (vtab *)b->pVtab;
  tuple_buf pre;
  int a = 0, p = 0, rc = SQLITE_OK, found = 0, empty = 0;
  size_t lolen = 0, hilen = 0;
  int has_lo = 0, has_hi = 0;
  kv_table *t;
  const char *s = idxStr ? idxStr : "";
  cur_reset(c);
  c->eof = 0;
  c->rowid = 0;
  tuple_buf_init(&pre);
  /* equalities on a key prefix: a value of another type matches no key */
  while (*s == 'E' && a < argc) {
    if (!put_elem(&pre, v->cols[v->pkcol[p]].kind, argv[a], 1)) empty = 1;
    a++, p++, s++;
  }
  /* then at most a lower and an upper bound of the next key column */
  while (*s && s[1] && a < argc && !empty) {
    int lower = s[0] == 'G', op = s[1];
    unsigned char *m = NULL;
    long n = bound(&pre, v->cols[v->pkcol[p]].kind, argv[a], lower, &m);
    if (n < 0) { rc = SQLITE_NOMEM; goto done; }
    if (n > 0 && lower) {
      size_t l = (size_t)n;
      /* > x: past every key starting with x (each element's encoding is
       * prefix-free); nothing is above when there is no successor */
      if (op == 'g' && (l = successor(m, l)) == 0) empty = 1;
      free(c->lo);
      c->lo = m, lolen = l, has_lo = l > 0;
    } else if (n > 0) {
      size_t h = (size_t)n;
      if (op == 'L') h = successor(m, h); /* <= x: past every key starting with x */
      free(c->hi);
      c->hi = m, hilen = h, has_hi = h > 0;
    }
    a++, s += 2;
  }
  if (!has_lo && pre.len) {
    c->lo = dup(pre.p, pre.len);
    if (c->lo == NULL) { rc = SQLITE_NOMEM; goto done; }
    lolen = pre.len, has_lo = 1;
  }
  if (!has_hi && pre.len) {
    c->hi = dup(pre.p, pre.len);
    if (c->hi == NULL) { rc = SQLITE_NOMEM; goto done; }
    hilen = successor(c->hi, pre.len);
    has_hi = hilen > 0;
  }
  if (empty || (has_lo && has_hi && bytes_cmp(c->lo, lolen, c->hi, hilen) >= 0)) {
    c->eof = 1;
    goto done;
  }
  t = kv_table_get(v->st->db, v->kvname, 0, &found);
  if (t == NULL) {
    rc = found ? vt_error(b->pVtab, "otskit_map: %s", kv_errmsg(v->st->db))
               : vt_error(b->pVtab, "the data table of this mapping was dropped (%s)", v->kvname);
    goto done;
  }
  if (has_lo || has_hi) v->st->range_reads++;
  else v->st->full_scans++;
  if (kv_scan(t, &c->kc, has_lo ? c->lo : (const unsigned char *)"", has_lo ? lolen : 0,
              has_hi ? c->hi : NULL, has_hi ? hilen : 0, idxNum & 1, -1) != KV_OK) {
    rc = vt_error(b->pVtab, "otskit_map: reading the store: %s", kv_errmsg(v->st->db));
    goto done;
  }
  c->open = 1;
  rc = advance(c, v);
done:
  tuple_buf_free(&pre);
  return rc;
}

/* Decodes the row at the cursor: 1 (visible), 0 (every cell expired:
 * not returned, as get_range), -1 (damaged). */
static int row_load(vcursor *c, vtab *v) {
  tuple_reader r;
  int i, live = 0, any = 0;
  size_t pos = 0;
  row_cell cell;
  int64_t cutoff = v->ttl_ms >= 0 ? v->st->now_ms - v->ttl_ms : INT64_MIN;
  tuple_reader_init(&r, c->key, c->klen, 0);
  for (i = 0; i < v->npk; i++)
    if (tuple_read(&r, &c->pk[i]) != 1) return -1;
  {
    tuple_item extra;
    if (tuple_read(&r, &extra) != 0) return -1; /* more elements than the schema's key */
  }
  for (i = 0; i < v->ncol; i++) c->cells[i].type = 0;
  for (;;) {
    int rc = row_next(c->val, c->vlen, &pos, &cell);
    if (rc < 0) return -1;
    if (rc == 0) break;
    any = 1;
    if (v->ttl_ms >= 0 && cell.ts <= cutoff) continue;
    live = 1;
    for (i = 0; i < v->ncol; i++) {
      vcol *col = &v->cols[i];
      if (col->pkpos || c->cells[i].type) continue;
      if (col->name_len == cell.name_len && memcmp(col->name, cell.name, cell.name_len) == 0) {
        c->cells[i] = cell;
        break;
      }
    }
  }
  return any && !live ? 0 : 1;
}

static int x_next(sqlite3_vtab_cursor *b) {
  vcursor *c = (vcursor *)b;
  return advance(c, (vtab *)b->pVtab);
}

static int x_eof(sqlite3_vtab_cursor *b) { return ((vcursor *)b)->eof; }

static int x_rowid(sqlite3_vtab_cursor *b, sqlite3_int64 *out) {
  *out = ((vcursor *)b)->rowid;
  return SQLITE_OK;
}

static int x_column(sqlite3_vtab_cursor *b, sqlite3_context *ctx, int i) {
  vcursor *c = (vcursor *)b;
  vtab *v = (vtab *)b->pVtab;
  vcol *col = &v->cols[i];
  if (col->pkpos) {
    const tuple_item *it = &c->pk[col->pkpos - 1];
    if (col->kind == 'i') {
      if (it->type == TUPLE_INT) sqlite3_result_int64(ctx, it->i);
      else sqlite3_result_null(ctx);
    } else if (it->type == TUPLE_BYTES || it->type == TUPLE_TEXT) {
      unsigned char *m = (unsigned char *)sqlite3_malloc64(it->len ? it->len : 1);
      if (m == NULL) return SQLITE_NOMEM;
      tuple_item_copy(it, m);
      if (col->kind == 's') sqlite3_result_text64(ctx, (const char *)m, it->len, sqlite3_free, SQLITE_UTF8);
      else sqlite3_result_blob64(ctx, m, it->len, sqlite3_free);
    } else {
      sqlite3_result_null(ctx);
    }
    return SQLITE_OK;
  }
  {
    const row_cell *cell = &c->cells[i];
    int t = cell->type & ~ROW_TS;
    switch (col->kind) {
    case 'i':
      if (t == ROW_INTEGER) sqlite3_result_int64(ctx, cell->i);
      else sqlite3_result_null(ctx);
      break;
    case 'd':
      if (t == ROW_DOUBLE) sqlite3_result_double(ctx, cell->d);
      else if (t == ROW_INTEGER) sqlite3_result_double(ctx, (double)cell->i); /* an integral number (LuaJIT writes those as INTEGER) */
      else sqlite3_result_null(ctx);
      break;
    case 't':
      if (t == ROW_TRUE || t == ROW_FALSE) sqlite3_result_int(ctx, t == ROW_TRUE);
      else sqlite3_result_null(ctx);
      break;
    case 's':
      if (t == ROW_STRING) sqlite3_result_text64(ctx, cell->s, cell->s_len, SQLITE_TRANSIENT, SQLITE_UTF8);
      else sqlite3_result_null(ctx);
      break;
    default:
      if (t == ROW_BINARY) sqlite3_result_blob64(ctx, cell->s ? cell->s : "", cell->s_len, SQLITE_TRANSIENT);
      else sqlite3_result_null(ctx);
    }
  }
  return SQLITE_OK;
}

static sqlite3_module MODULE = {
  0,             /* iVersion */
  x_connect,     /* xCreate: the table holds nothing of its own */
  x_connect,     /* xConnect */
  x_bestindex, x_disconnect, x_disconnect, x_open, x_close, x_filter, x_next, x_eof, x_column, x_rowid,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
};

/* MySQL's DIV and MOD (sqlvt.h). An operand that is not an integer is
 * the exact decimal its shortest round-trip text spells (7.5 is 75e-1),
 * as MySQL's DECIMAL arithmetic sees a literal: m * 10^e. */
typedef struct { int64_t m; int e; } sqldec;

/* d as a decimal of at most 17 digits; 0 if d is not finite */
static int dec_of_double(double d, sqldec *out) {
  char buf[48], *p, *ep;
  int prec, e;
  int64_t m = 0;
  if (!isfinite(d)) return 0;
  for (prec = 15; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    if (strtod(buf, NULL) == d) break;
  }
  ep = strchr(buf, 'e');
  if (ep == NULL) return 0;
  e = atoi(ep + 1);
  for (p = buf; p < ep; p++)
    if (*p >= '0' && *p <= '9') m = m * 10 + (*p - '0');
  e -= prec > 17 ? 16 : prec - 1;
  if (buf[0] == '-') m = -m;
  while (m != 0 && m % 10 == 0) { m /= 10; e++; }
  out->m = m, out->e = m == 0 ? 0 : e;
  return 1;
}

/* x * 10^k (k >= 0) into *x; 0 if it leaves int64 */
static int dec_scale(int64_t *x, int k) {
  for (; k > 0 && *x != 0; k--) {
    if (*x > INT64_MAX / 10 || *x < -(INT64_MAX / 10)) return 0;
    *x *= 10;
  }
  return 1;
}

/* a and b brought to one exponent: *a, *b, *e; 0 if that leaves int64 */
static int dec_align(sqldec a, sqldec b, int64_t *ia, int64_t *ib, int *e) {
  *ia = a.m, *ib = b.m;
  if (a.e > b.e) {
    *e = b.e;
    return a.e - b.e <= 19 ? dec_scale(ia, a.e - b.e) : a.m == 0;
  }
  *e = a.e;
  return b.e - a.e <= 19 ? dec_scale(ib, b.e - a.e) : b.m == 0;
}

/* an argument of div or mod: t 'i' (an integer: i) or 'd' (a real: d,
 * and dec if it has one: hasdec) */
typedef struct { int t, hasdec; int64_t i; double d; sqldec dec; } sqlarg;

static void arith_arg(sqlite3_value *v, sqlarg *a) {
  if (sqlite3_value_numeric_type(v) == SQLITE_INTEGER) {
    a->t = 'i';
    a->i = (int64_t)sqlite3_value_int64(v);
    a->d = (double)a->i;
    a->dec.m = a->i, a->dec.e = 0, a->hasdec = 1;
  } else { /* a real; text or a blob that is no number: MySQL reads its numeric prefix */
    a->t = 'd';
    a->d = sqlite3_value_double(v);
    a->hasdec = dec_of_double(a->d, &a->dec);
  }
}

/* both arguments of div or mod into a, b: 0 once NULL is the answer
 * (either is NULL), 'i' when both are integers, 'e' when both have
 * decimals at one exponent (x, y; *e), else 'd' (reals: a->d, b->d) */
static int arith_args(sqlite3_context *ctx, sqlite3_value **argv, sqlarg *a, sqlarg *b, int64_t *x, int64_t *y,
                      int *e) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    sqlite3_result_null(ctx);
    return 0;
  }
  arith_arg(argv[0], a);
  arith_arg(argv[1], b);
  if (a->t == 'i' && b->t == 'i') return 'i';
  if (a->hasdec && b->hasdec && dec_align(a->dec, b->dec, x, y, e)) return 'e';
  return 'd';
}

/* div(a, b): MySQL's a DIV b -- the quotient truncated toward zero, a
 * BIGINT; NULL if either is NULL or b is 0; an error past BIGINT */
static void f_div(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlarg a, b;
  int64_t x = 0, y = 0;
  int e = 0, how = arith_args(ctx, argv, &a, &b, &x, &y, &e);
  double q;
  (void)argc;
  if (how == 'i') x = a.i, y = b.i;
  if (how == 'i' || how == 'e') {
    if (y == 0) { sqlite3_result_null(ctx); return; }
    if (x == INT64_MIN && y == -1) goto range;
    sqlite3_result_int64(ctx, (sqlite3_int64)(x / y));
    return;
  }
  if (how == 0) return;
  if (b.d == 0) { sqlite3_result_null(ctx); return; }
  q = trunc(a.d / b.d);
  if (!(q >= -9223372036854775808.0 && q < 9223372036854775808.0)) goto range;
  sqlite3_result_int64(ctx, (sqlite3_int64)q);
  return;
range:
  sqlite3_result_error(ctx, "BIGINT value is out of range in DIV", -1);
}

/* mod(a, b): MySQL's MOD(a, b), a MOD b, a % b -- the remainder with a's
 * sign, an integer when both are; NULL if either is NULL or b is 0 */
static void f_mod(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlarg a, b;
  int64_t x = 0, y = 0;
  int e = 0, how = arith_args(ctx, argv, &a, &b, &x, &y, &e);
  char buf[48];
  (void)argc;
  if (how == 0) return;
  if (how == 'i') {
    if (b.i == 0) sqlite3_result_null(ctx);
    else sqlite3_result_int64(ctx, b.i == -1 ? 0 : (sqlite3_int64)(a.i % b.i));
  } else if (how == 'e') {
    if (y == 0) { sqlite3_result_null(ctx); return; }
    snprintf(buf, sizeof buf, "%llde%d", (long long)(y == -1 ? 0 : x % y), e);
    sqlite3_result_double(ctx, strtod(buf, NULL));
  } else if (b.d == 0) {
    sqlite3_result_null(ctx);
  } else {
    sqlite3_result_double(ctx, fmod(a.d, b.d));
  }
}

int sqlvt_register(kv_db *db, sqlvt_state *st) {
  sqlite3 *sq = (sqlite3 *)kv_sqlite(db);
  int rc;
  st->db = db;
  rc = sqlite3_create_function(sq, "div", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_div, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(sq, "mod", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_mod, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  return sqlite3_create_module_v2(sq, "otskit_map", &MODULE, st, NULL);
}

static const char *const FUNCS[] = {
  "count", "sum", "total", "avg", "min", "max", "group_concat", "abs", "lower", "upper", "length",
  "substr", "substring", "coalesce", "ifnull", "nullif", "iif", "round", "trim", "ltrim", "rtrim",
  "replace", "instr", "like", "glob", "hex", "typeof", "char", "unicode", "printf", "format",
  "sign", "ceil", "ceiling", "floor", "trunc", "sqrt", "pow", "power", "mod", "div", "ln", "log", "log10",
  "log2", "exp", "pi", "quote", NULL
};

int sqlvt_fn_allowed(const char *name) {
  int i;
  if (name == NULL) return 0;
  for (i = 0; FUNCS[i]; i++)
    if (sqlite3_stricmp(FUNCS[i], name) == 0) return 1;
  return 0;
}

int sqlvt_authorize(void *arg, int action, const char *a, const char *b, const char *dbname,
                    const char *trigger) {
  (void)arg, (void)trigger;
  switch (action) {
  case SQLITE_SELECT: case SQLITE_RECURSIVE: return SQLITE_OK;
  case SQLITE_READ:
    /* a mapping table's column (a: table); sqlite's own tables never */
    if (a == NULL || dbname == NULL || dbname[0] == 0) return SQLITE_OK; /* a CTE or subquery column */
    if (dbname && strcmp(dbname, "temp") == 0 && sqlite3_strnicmp(a, "sqlite_", 7) != 0) return SQLITE_OK;
    return SQLITE_DENY;
  case SQLITE_FUNCTION: return sqlvt_fn_allowed(b) ? SQLITE_OK : SQLITE_DENY;
  default: return SQLITE_DENY;
  }
}
