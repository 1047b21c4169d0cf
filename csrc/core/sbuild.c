/* sbuild.c -- see sbuild.h. Each value is read as docs.lua reads the
 * value the store's Lua decoder gives it (row.decode: the newest cell of a
 * name with a timestamp >= lo, max_versions cells kept per name). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "row.h"
#include "sbuild.h"

/* --- single_word (analyzers.lua), byte for byte ------------------------ */

/* the length of the character at s[0..n) as analyzers.lua's CHAR pattern
 * "[%z\1-\127\194-\244][\128-\191]*" matches it, or 0 (a byte no
 * character starts with: skipped) */
static size_t char_len(const unsigned char *s, size_t n) {
  size_t k = 1;
  if (!(s[0] <= 127 || (s[0] >= 194 && s[0] <= 244))) return 0;
  while (k < n && s[k] >= 128 && s[k] <= 191) k++;
  return k;
}

/* class(): 'c' CJK (a token of its own), 'l' letter, 'd' digit, 's' separator */
static int char_class(const unsigned char *s, size_t k) {
  unsigned b = s[0], b2, b3, b4;
  unsigned long c;
  if (b < 0x80) {
    if (b >= 48 && b <= 57) return 'd';
    if ((b >= 65 && b <= 90) || (b >= 97 && b <= 122)) return 'l';
    return 's';
  }
  /* a truncated sequence counts its missing bytes as 0 */
  b2 = k > 1 ? s[1] % 64 : 0, b3 = k > 2 ? s[2] % 64 : 0, b4 = k > 3 ? s[3] % 64 : 0;
  if (b < 0xE0) c = (unsigned long)(b % 0x20) * 64 + b2;
  else if (b < 0xF0) c = ((unsigned long)(b % 0x10) * 64 + b2) * 64 + b3;
  else c = (((unsigned long)(b % 0x08) * 64 + b2) * 64 + b3) * 64 + b4;
  if ((c >= 0x2E80 && c <= 0x2FFF) || (c >= 0x3040 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7AF) ||
      (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x2FFFF)) return 'c';
  if ((c >= 0x2000 && c <= 0x206F) || (c >= 0x3000 && c <= 0x303F) || (c >= 0xFF00 && c <= 0xFF0F) ||
      (c >= 0xFF1A && c <= 0xFF20) || (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65) ||
      c == 0xA0 || (c >= 0xA1 && c <= 0xBF) || c == 0xD7 || c == 0xF7) return 's';
  if (c >= 0xFF10 && c <= 0xFF19) return 'd';
  return 'l';
}

static const char HEXD[] = "0123456789abcdef";

/* appends s[0..n) hex-encoded (lowered: ASCII A-Z, as string.lower) */
static size_t put_hex(char *out, size_t at, const unsigned char *s, size_t n, int lower) {
  size_t i;
  for (i = 0; i < n; i++) {
    unsigned b = s[i];
    if (lower && b >= 'A' && b <= 'Z') b += 32;
    out[at++] = HEXD[b >> 4];
    out[at++] = HEXD[b & 15];
  }
  return at;
}

size_t sb_fts_size(size_t n) { return 3 * n + 1; }

/* the tokens go out as they form: a word's characters (the bytes gmatch
 * skips are not among them) hex-encoded one after another */
size_t sb_fts_text(const char *text, size_t n, int lower, int delimit, char *out) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0, at = 0;
  int last = 0, inword = 0;
  while (i < n) {
    size_t k = char_len(s + i, n - i);
    int cls;
    if (k == 0) { i++; continue; } /* not a character: gmatch skips the byte */
    cls = char_class(s + i, k);
    if (cls == 'c' || cls == 's') {
      inword = 0;
      if (cls == 'c') {
        if (at > 0) out[at++] = ' ';
        at = put_hex(out, at, s + i, k, 0);
      }
    } else {
      if (delimit && inword && cls != last) inword = 0;
      if (!inword) {
        if (at > 0) out[at++] = ' ';
        inword = 1;
      }
      at = put_hex(out, at, s + i, k, lower);
    }
    last = cls;
    i += k;
  }
  return at;
}

/* --- "lat,lon" (docs.geo) --------------------------------------------- */

static int lspace(int c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static int numch(int c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

/* tonumber() of s[0..n) (only [-+0-9.eE] bytes): 1 and the value, or 0 */
static int to_number(const char *s, size_t n, double *v) {
  char buf[64], *end;
  if (n == 0 || n >= sizeof buf) {
    /* a longer numeral: strtod on a copy all the same */
    char *p;
    int ok;
    if (n == 0) return 0;
    p = (char *)malloc(n + 1);
    if (p == NULL) return 0;
    memcpy(p, s, n);
    p[n] = '\0';
    *v = strtod(p, &end);
    ok = end == p + n;
    free(p);
    return ok;
  }
  memcpy(buf, s, n);
  buf[n] = '\0';
  *v = strtod(buf, &end);
  return end == buf + n;
}

int sb_geo(const char *s, size_t n, double *lat, double *lon) {
  size_t i = 0, a, b;
  while (i < n && lspace((unsigned char)s[i])) i++;
  a = i;
  while (i < n && numch((unsigned char)s[i])) i++;
  if (i == a || !to_number(s + a, i - a, lat)) return 0;
  while (i < n && lspace((unsigned char)s[i])) i++;
  if (i >= n || s[i] != ',') return 0;
  i++;
  while (i < n && lspace((unsigned char)s[i])) i++;
  b = i;
  while (i < n && numch((unsigned char)s[i])) i++;
  if (i == b || !to_number(s + b, i - b, lon)) return 0;
  while (i < n && lspace((unsigned char)s[i])) i++;
  if (i != n) return 0;
  return !(*lat < -90 || *lat > 90 || *lon < -180 || *lon > 180);
}

/* --- the build ------------------------------------------------------- */

/* binds a DOUBLE field's value as the Lua binding does (lsql.c: LuaJIT
 * binds an integral number as an INTEGER) */
static int bind_double(sqlite3_stmt *st, int i, double d, int jit) {
  if (jit && d == floor(d) && d >= -9.2e18 && d <= 9.2e18) return sqlite3_bind_int64(st, i, (sqlite3_int64)d);
  return sqlite3_bind_double(st, i, d);
}

static int step(sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* one row: its cells' values into the plan's statements */
static int one_row(sb_plan *p, sqlite3 *db, const unsigned char *key, size_t klen, const unsigned char *val,
                   size_t vlen, row_cell *vals, char **fts, size_t *ftslen, char **buf, size_t *bufcap,
                   char *err, size_t errlen, int *corrupt) {
  size_t pos = 0, pnl = 0;
  const char *pn = NULL;
  int64_t nv = 0, kept = 0, newest = 0;
  int rc, skip = 0, fi = 0, i, any_fts = 0;
  size_t need = 0;
  row_cell c;
  for (i = 0; i < p->nfields; i++) vals[i].type = 0;
  /* the newest kept cell of each field (cells and fields both sorted by name) */
  while ((rc = row_next(val, vlen, &pos, &c)) == 1) {
    if (pn == NULL || pnl != c.name_len || memcmp(pn, c.name, pnl) != 0) {
      pn = c.name, pnl = c.name_len, nv = 0, skip = 0;
    }
    if (skip || c.ts < p->lo || nv >= p->maxv) continue;
    nv++;
    kept++;
    if (c.ts > newest) newest = c.ts;
    if (nv == 1) {
      while (fi < p->nfields && row_name_cmp(p->fields[fi].name, p->fields[fi].name_len, c.name, c.name_len) < 0) fi++;
      if (fi < p->nfields && row_name_cmp(p->fields[fi].name, p->fields[fi].name_len, c.name, c.name_len) == 0)
        vals[fi] = c;
    }
  }
  if (rc < 0) {
    snprintf(err, errlen, "a stored row: corrupt row at byte %d", (int)pos);
    *corrupt = 1;
    return SQLITE_CORRUPT;
  }
  if (kept == 0 && vlen > 0) return SQLITE_OK; /* every cell expired: not in the index */
  /* the document */
  sqlite3_bind_int64(p->doc, 1, p->doc_id);
  sqlite3_bind_blob(p->doc, 2, klen ? (const void *)key : "", (int)klen, SQLITE_STATIC);
  sqlite3_bind_int64(p->doc, 3, newest);
  for (i = 0; i < p->nfields; i++) {
    const sb_field *f = &p->fields[i];
    const row_cell *v = &vals[i];
    int at = 3 + f->col, str = v->type == ROW_STRING || v->type == ROW_BINARY;
    if (f->col) {
      switch (f->kind) {
      case SB_LONG:
        if (v->type == ROW_INTEGER) sqlite3_bind_int64(p->doc, at, v->i);
        else if (v->type == ROW_DOUBLE && v->d == floor(v->d) && v->d >= -9223372036854775808.0 &&
                 v->d < 9223372036854775808.0)
          sqlite3_bind_int64(p->doc, at, (sqlite3_int64)v->d);
        else sqlite3_bind_null(p->doc, at);
        break;
      case SB_DOUBLE:
        if (v->type == ROW_DOUBLE) bind_double(p->doc, at, v->d, p->jit_binds);
        else if (v->type == ROW_INTEGER) bind_double(p->doc, at, (double)v->i, p->jit_binds);
        else sqlite3_bind_null(p->doc, at);
        break;
      case SB_BOOLEAN:
        if (v->type == ROW_TRUE || v->type == ROW_FALSE) sqlite3_bind_int(p->doc, at, v->type == ROW_TRUE);
        else sqlite3_bind_null(p->doc, at);
        break;
      case SB_KEYWORD:
        if (str) sqlite3_bind_text(p->doc, at, v->s_len ? v->s : "", (int)v->s_len, SQLITE_STATIC);
        else sqlite3_bind_null(p->doc, at);
        break;
      default: sqlite3_bind_null(p->doc, at);
      }
    }
    if (f->kind == SB_TEXT && str) need += sb_fts_size(v->s_len);
  }
  rc = step(p->doc);
  if (rc != SQLITE_OK) return rc;
  /* what the value columns do not hold */
  if (need > *bufcap) {
    char *nb = (char *)realloc(*buf, need);
    if (nb == NULL) { snprintf(err, errlen, "out of memory"); return SQLITE_NOMEM; }
    *buf = nb, *bufcap = need;
  }
  need = 0;
  for (i = 0; i < p->nfields; i++) {
    const sb_field *f = &p->fields[i];
    const row_cell *v = &vals[i];
    int str = v->type == ROW_STRING || v->type == ROW_BINARY;
    double lat, lon;
    if (!str || (f->kind != SB_TEXT && f->kind != SB_GEO)) continue;
    if (f->kind == SB_GEO && !sb_geo(v->s, v->s_len, &lat, &lon)) continue;
    sqlite3_bind_int(p->has, 1, f->id);
    sqlite3_bind_int64(p->has, 2, p->doc_id);
    if ((rc = step(p->has)) != SQLITE_OK) return rc;
    if (f->kind == SB_GEO) {
      sqlite3_bind_int64(p->gpt, 1, p->gpt_id);
      sqlite3_bind_int64(p->gpt, 2, p->doc_id);
      sqlite3_bind_int(p->gpt, 3, f->id);
      sqlite3_bind_double(p->gpt, 4, lat);
      sqlite3_bind_double(p->gpt, 5, lon);
      if ((rc = step(p->gpt)) != SQLITE_OK) return rc;
      sqlite3_bind_int64(p->geo, 1, p->gpt_id);
      sqlite3_bind_double(p->geo, 2, lat);
      sqlite3_bind_double(p->geo, 3, lon);
      if ((rc = step(p->geo)) != SQLITE_OK) return rc;
      p->gpt_id++;
    } else {
      char *o = *buf + need;
      size_t n = sb_fts_text(v->s, v->s_len, f->lower, f->delimit, o);
      fts[f->fts - 1] = o, ftslen[f->fts - 1] = n;
      need += sb_fts_size(v->s_len);
      any_fts = 1;
    }
  }
  if (any_fts) {
    sqlite3_bind_int64(p->fts, 1, p->doc_id);
    for (i = 0; i < p->nfts; i++) {
      sqlite3_bind_text(p->fts, 2 + i, fts[i] ? fts[i] : "", fts[i] ? (int)ftslen[i] : 0, SQLITE_STATIC);
      fts[i] = NULL;
    }
    if ((rc = step(p->fts)) != SQLITE_OK) return rc;
  }
  p->doc_id++;
  p->rows++;
  (void)db;
  return SQLITE_OK;
}

int sb_build(kv_db *kdb, kv_table *t, sqlite3 *db, sb_plan *p, char *err, size_t errlen, int *corrupt) {
  kv_cursor cur;
  const void *k, *v;
  size_t kl, vl, bufcap = 0;
  char *buf = NULL, **fts;
  size_t *ftslen;
  row_cell *vals;
  int rc = SQLITE_OK, r;
  *corrupt = 0;
  p->kv_class = -1;
  err[0] = '\0';
  vals = (row_cell *)calloc((size_t)p->nfields + 1, sizeof *vals);
  fts = (char **)calloc((size_t)p->nfts + 1, sizeof *fts);
  ftslen = (size_t *)calloc((size_t)p->nfts + 1, sizeof *ftslen);
  if (vals == NULL || fts == NULL || ftslen == NULL) {
    free(vals), free(fts), free(ftslen);
    snprintf(err, errlen, "out of memory");
    return SQLITE_NOMEM;
  }
  if (kv_scan(t, &cur, NULL, 0, NULL, 0, 0, -1) != KV_OK) {
    free(vals), free(fts), free(ftslen);
    snprintf(err, errlen, "%s", kv_errmsg(kdb));
    p->kv_class = kv_errclass(kdb);
    return SQLITE_ERROR;
  }
  while ((r = kv_next(&cur, &k, &kl, &v, &vl)) == KV_ROW) {
    rc = one_row(p, db, (const unsigned char *)k, kl, (const unsigned char *)v, vl, vals, fts, ftslen, &buf, &bufcap,
                 err, errlen, corrupt);
    if (rc != SQLITE_OK) break;
  }
  if (rc == SQLITE_OK && r != KV_DONE) { /* the kv read failed (as its Lua cursor reports it) */
    rc = SQLITE_ERROR;
    snprintf(err, errlen, "%s", kv_errmsg(kdb));
    p->kv_class = kv_errclass(kdb);
  } else if (rc != SQLITE_OK && err[0] == '\0') {
    snprintf(err, errlen, "%s", sqlite3_errmsg(db));
  }
  kv_cursor_close(&cur);
  free(buf), free(vals), free(fts), free(ftslen);
  return rc;
}
