/* http.h -- many HTTP requests in flight over libcurl's multi interface.
 *
 * One otsk_http is a curl multi handle: its connection cache keeps
 * connections alive across requests (so sequential calls to one host reuse
 * one TCP/TLS connection), and finished easy handles are pooled and reused.
 * Requests are submitted, then otsk_http_wait drives them all; it blocks
 * only inside curl_multi_poll, for at most the timeout the caller gives.
 * HTTPS verifies the peer and host name unless told not to.
 * Plain C: no Lua headers. Not thread-safe: one otsk_http per thread. */
#ifndef OTSKIT_HTTP_H
#define OTSKIT_HTTP_H

#include <stddef.h>
#include <stdint.h>

typedef struct otsk_http otsk_http;
typedef struct otsk_http_req otsk_http_req;

typedef struct {
  long max_host_connections;   /* 0: no limit */
  long max_total_connections;  /* 0: no limit */
  int insecure;                /* 1: no peer/host verification (tests only) */
  const char *ca_file;         /* NULL: the system's CA bundle */
  size_t max_response;         /* bytes; 0: 64 MiB */
} otsk_http_opts;

typedef struct {
  const char *method;          /* "POST", "GET", ... */
  const char *url;
  const char *const *headers;  /* "Name: value" lines (copied) */
  size_t nheaders;
  const char *body;            /* copied; may be NULL when body_len is 0 */
  size_t body_len;
  long timeout_ms;             /* whole transfer; 0: none */
  long connect_timeout_ms;     /* 0: curl's default (300 s) */
  uint64_t id;                 /* the caller's id, returned with the result */
} otsk_http_request;

/* Failure classes of a finished request (besides OTSK_HTTP_OK). */
enum {
  OTSK_HTTP_OK = 0,
  OTSK_HTTP_CONNECT,     /* never sent: resolve/connect failed */
  OTSK_HTTP_TIMEOUT,     /* timed out; may have been sent */
  OTSK_HTTP_NETWORK,     /* send/receive failed; may have been sent */
  OTSK_HTTP_TLS,         /* TLS handshake or certificate failure: not sent */
  OTSK_HTTP_TOO_LARGE,   /* the response exceeded max_response */
  OTSK_HTTP_OTHER
};

/* NULL on failure, with a message in err. */
otsk_http *otsk_http_new(const otsk_http_opts *o, char *err, size_t errlen);
/* Aborts what is in flight and frees everything (requests included). */
void otsk_http_free(otsk_http *h);

/* Starts a request. Returns 0, or -1 with a message in err. */
int otsk_http_submit(otsk_http *h, const otsk_http_request *r, char *err, size_t errlen);

/* Drives the transfers until at least one has finished or timeout_ms has
 * passed (0: just do what is ready). Returns the number of finished
 * requests ready to collect with otsk_http_next, or -1 (message in err). */
int otsk_http_wait(otsk_http *h, long timeout_ms, char *err, size_t errlen);

/* Number of requests submitted and not yet collected. */
size_t otsk_http_pending(const otsk_http *h);

/* Takes a finished request, or NULL. The caller reads it with the
 * accessors below and gives it back with otsk_http_release. */
otsk_http_req *otsk_http_next(otsk_http *h);
void otsk_http_release(otsk_http *h, otsk_http_req *q);

/* Takes the finished request with this id, or NULL (not finished yet, or
 * no such request). */
otsk_http_req *otsk_http_take(otsk_http *h, uint64_t id);

/* Aborts a request by id (finished or not); returns 1 if it was there. */
int otsk_http_cancel(otsk_http *h, uint64_t id);

uint64_t otsk_http_req_id(const otsk_http_req *q);
int otsk_http_req_failure(const otsk_http_req *q);     /* OTSK_HTTP_* */
const char *otsk_http_req_error(const otsk_http_req *q); /* "" when OK */
long otsk_http_req_status(const otsk_http_req *q);
const char *otsk_http_req_body(const otsk_http_req *q, size_t *len);
/* The final response's header block, "Name: value\r\n" lines. */
const char *otsk_http_req_headers(const otsk_http_req *q, size_t *len);
long otsk_http_req_connects(const otsk_http_req *q);   /* new connections it opened */
double otsk_http_req_seconds(const otsk_http_req *q);  /* total transfer time */

/* Walks a header block ("Name: value" lines ending in \n or \r\n; the
 * bytes come from the peer): returns 1 with the next field's name (non-
 * empty, no ':', CR or LF) and its value (up to a CR, spaces and tabs
 * around it trimmed), pointing into the block, and advances *pos; 0 at
 * the end. Lines without a ':', or with an empty or CR-holding name, are
 * skipped. */
int otsk_http_header_next(const char **pos, const char *end, const char **name,
                          size_t *nlen, const char **value, size_t *vlen);

/* New connections opened by this handle so far. */
uint64_t otsk_http_connects(const otsk_http *h);

#endif
