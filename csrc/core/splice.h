/* splice.h -- spliced keys: several columns joined into one string whose
 * byte order equals the tuple order. Plain C: no Lua.
 *
 * An int field is written as the decimal digits of v - min, zero-padded to
 * its width; a string field as its bytes, each from the field's charset.
 * Fields are joined by one separator byte that is lower than every byte of
 * every string charset: then a string that is a prefix of another sorts
 * first, as in the tuple order ('a100' < 'a1001'), and the separator
 * never occurs inside a field, so decoding is unambiguous. */
#ifndef OTSKIT_SPLICE_H
#define OTSKIT_SPLICE_H

#include <stddef.h>
#include <stdint.h>

#define SPLICE_KEY_MAX 1024   /* Tablestore: STRING key values <= 1 KB */
#define SPLICE_WIDTH_MAX 19   /* 10^19 - 1 < 2^64 */

typedef enum { SPLICE_INT = 0, SPLICE_STRING = 1 } splice_kind;

typedef struct splice_field {
  splice_kind kind;
  int width;                  /* SPLICE_INT: digits, 1..SPLICE_WIDTH_MAX */
  int64_t min;                /* SPLICE_INT: the value written as all zeros */
  unsigned char allow[32];    /* SPLICE_STRING: bitset of allowed bytes */
} splice_field;

typedef struct splice {
  unsigned char sep;
  int nfields;
  splice_field *fields;       /* nfields entries, owned by the caller */
} splice;

/* Fills the charset bitset of f from a name ("alnum", "digits", "hex"
 * (0-9a-f), "lower", "upper") or, for any other string, the explicit set
 * of its n bytes. Returns 0, or -1 for an empty set. */
int splice_set_charset(splice_field *f, const char *s, size_t n);

/* Is byte c allowed in string field f? */
int splice_allows(const splice_field *f, unsigned char c);

/* Checks that the separator keeps the order: it must be lower than every
 * byte any string field allows (and, with int fields, not a digit).
 * Returns -1 if so, else the index of the first offending field, with
 * *bad set to the lowest allowed byte that is not above the separator. */
int splice_check(const splice *sp, unsigned char *bad);

/* The encoder writes into a caller-owned splice_out. */
typedef struct splice_out { char buf[SPLICE_KEY_MAX]; size_t len; } splice_out;

typedef enum {
  SPLICE_OK = 0,
  SPLICE_ERR_CHARSET,         /* a byte outside the field's charset */
  SPLICE_ERR_WIDTH,           /* int below min or wider than width */
  SPLICE_ERR_TOOLONG          /* the key would exceed SPLICE_KEY_MAX */
} splice_err;

/* Appends field i (with the separator before it when i > 0). For strings
 * *bad receives the offset of the first byte outside the charset. */
splice_err splice_put_int(const splice *sp, int i, int64_t v, splice_out *o);
splice_err splice_put_string(const splice *sp, int i, const void *s, size_t n,
                             splice_out *o, size_t *bad);

/* One decoded field: the bytes of a string field, the value of an int. */
typedef struct splice_part { const char *p; size_t n; int64_t v; } splice_part;

/* Splits and checks the key s[0..n) into nfields parts. Returns 0, or -1
 * with *why set (static string) when s is not a key this splice encodes:
 * wrong field count, a byte outside a charset, an int field that is not
 * exactly width digits or that overflows. Never reads outside s. */
int splice_decode(const splice *sp, const char *s, size_t n,
                  splice_part *parts, const char **why);

#endif
