/* bucket.h -- SQL functions numbering the buckets of histogram and
 * date_histogram group-bys (each evaluated once per value, in C):
 *   floor_div(a, b)  -> floor(a / b) in double as an integer (saturated
 *                       to the int64 range); NULL when a or b is NULL, b
 *                       is 0 or the quotient is NaN
 *   floor_div(a, b, off) -> floor((a - off) / b): exact when all three
 *                       are integers (b > 0: a LONG histogram's bucket
 *                       number, also near +-2^63), else as floor_div(a -
 *                       off, b) in double
 *   ym_index(s)      -> Y * 12 + M - 1 of strftime('%Y%m', ...)'s text
 *                       s (the year: all but the last two characters,
 *                       the month: those two); NULL for NULL or a text
 *                       that is not so
 *   geohash(lat, lon, p) -> the geohash cell (p = 1..12 base-32
 *                       characters, longitude bits first) of a point;
 *                       NULL for NULL arguments or p out of range
 * No Lua here. */
#ifndef OTSKIT_BUCKET_H
#define OTSKIT_BUCKET_H

#include <stdint.h>
#include <sqlite3.h>

/* floor(a / b) saturated to int64; 0 and *ok = 0 when it is NaN. */
int64_t bucket_floor_div(double a, double b, int *ok);

/* floor((a - off) / b) exactly, for b > 0; 0 and *ok = 0 when it is
 * past int64. */
int64_t bucket_floor_div_off(int64_t a, int64_t b, int64_t off, int *ok);

/* Y * 12 + M - 1 of "<year><MM>" (len bytes); 0 and *ok = 0 when s is
 * not a (signed) year followed by a month 01..12. */
int64_t bucket_ym_index(const char *s, int len, int *ok);

/* Writes the geohash of (lat, lon) with precision characters (1..12) and
 * a NUL to out (13 bytes); returns precision, or 0 when it is out of range
 * or a coordinate is NaN. */
int bucket_geohash(double lat, double lon, int precision, char *out);

/* Registers floor_div, geohash and ym_index on db. SQLITE_OK or an error code. */
int bucket_register(sqlite3 *db);

#endif
