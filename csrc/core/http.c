/* http.c -- see http.h. Requests live on one of three lists: active (in
 * the multi handle), done (finished, not yet collected) or the pool (free,
 * their easy handle kept for reuse). */
#include "http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define POOL_MAX 64
#define DEFAULT_MAX_RESPONSE ((size_t)64 << 20)

typedef struct {
  char *p;
  size_t len, cap;
} buf;

struct otsk_http_req {
  CURL *easy;
  struct curl_slist *hdrs;
  otsk_http *h;
  uint64_t id;
  buf body, head;
  int failure, too_large;
  long status, connects;
  double secs;
  char error[CURL_ERROR_SIZE];
  otsk_http_req *prev, *next;
};

struct otsk_http {
  CURLM *multi;
  otsk_http_opts o;
  char *ca_file;
  otsk_http_req *active;            /* doubly linked */
  otsk_http_req *done, *done_tail;  /* FIFO */
  otsk_http_req *pool;
  size_t npool, nactive, ndone;
  uint64_t connects;
};

static int buf_add(buf *b, const char *p, size_t n, size_t max) {
  if (n > max || b->len > max - n) return -1;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (q == NULL) return -1;
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  otsk_http_req *q = ud;
  size_t max = q->h->o.max_response;
  if (buf_add(&q->body, p, size * n, max) != 0) {
    q->too_large = 1;
    return 0;  /* makes curl abort the transfer */
  }
  return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  otsk_http_req *q = ud;
  size_t len = size * n;
  /* a new status line (after 100 Continue, or a retried request): only the
   * final response's headers are kept */
  if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
    q->head.len = 0;
    return len;
  }
  if (buf_add(&q->head, p, len, (size_t)1 << 20) != 0) return 0;
  /* the end of the headers: size the body buffer once from Content-Length */
  if (len <= 2 && q->body.len == 0) {
    curl_off_t cl = -1;
    if (curl_easy_getinfo(q->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK && cl > 0 &&
        (size_t)cl <= q->h->o.max_response && (size_t)cl + 1 > q->body.cap) {
      char *b = realloc(q->body.p, (size_t)cl + 1);
      if (b) {
        q->body.p = b;
        q->body.cap = (size_t)cl + 1;
      }
    }
  }
  return len;
}

static void set_err(char *err, size_t errlen, const char *msg) {
  if (err && errlen) snprintf(err, errlen, "%s", msg);
}

otsk_http *otsk_http_new(const otsk_http_opts *o, char *err, size_t errlen) {
  static int inited;
  if (!inited) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      set_err(err, errlen, "curl_global_init failed");
      return NULL;
    }
    inited = 1;
  }
  otsk_http *h = calloc(1, sizeof *h);
  if (h == NULL) {
    set_err(err, errlen, "out of memory");
    return NULL;
  }
  if (o) h->o = *o;
  if (h->o.max_response == 0) h->o.max_response = DEFAULT_MAX_RESPONSE;
  if (h->o.ca_file) {
    h->ca_file = strdup(h->o.ca_file);
    if (h->ca_file == NULL) {
      free(h);
      set_err(err, errlen, "out of memory");
      return NULL;
    }
  }
  h->o.ca_file = h->ca_file;
  h->multi = curl_multi_init();
  if (h->multi == NULL) {
    free(h->ca_file);
    free(h);
    set_err(err, errlen, "curl_multi_init failed");
    return NULL;
  }
  if (h->o.max_host_connections > 0)
    curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, h->o.max_host_connections);
  if (h->o.max_total_connections > 0)
    curl_multi_setopt(h->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, h->o.max_total_connections);
  /* idle connections kept for reuse: enough for a wide fan-out */
  curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, 64L);
  return h;
}

static void req_clear(otsk_http_req *q) {
  curl_slist_free_all(q->hdrs);
  q->hdrs = NULL;
  q->body.len = q->head.len = 0;
  q->failure = q->too_large = 0;
  q->status = q->connects = 0;
  q->secs = 0;
  q->error[0] = '\0';
}

static void req_destroy(otsk_http_req *q) {
  if (q->easy) curl_easy_cleanup(q->easy);
  curl_slist_free_all(q->hdrs);
  free(q->body.p);
  free(q->head.p);
  free(q);
}

static void free_list(otsk_http_req *q) {
  while (q) {
    otsk_http_req *n = q->next;
    req_destroy(q);
    q = n;
  }
}

void otsk_http_free(otsk_http *h) {
  if (h == NULL) return;
  for (otsk_http_req *q = h->active; q; q = q->next)
    curl_multi_remove_handle(h->multi, q->easy);
  free_list(h->active);
  free_list(h->done);
  free_list(h->pool);
  curl_multi_cleanup(h->multi);
  free(h->ca_file);
  free(h);
}

static void unlink_active(otsk_http *h, otsk_http_req *q) {
  if (q->prev) q->prev->next = q->next;
  else h->active = q->next;
  if (q->next) q->next->prev = q->prev;
  q->prev = q->next = NULL;
  h->nactive--;
}

void otsk_http_release(otsk_http *h, otsk_http_req *q) {
  if (q == NULL) return;
  if (h->npool >= POOL_MAX) {
    req_destroy(q);
    return;
  }
  req_clear(q);
  /* big buffers are not kept around in the pool */
  if (q->body.cap > ((size_t)1 << 20)) {
    free(q->body.p);
    q->body.p = NULL;
    q->body.cap = 0;
  }
  q->prev = NULL;
  q->next = h->pool;
  h->pool = q;
  h->npool++;
}

static int has_header(const otsk_http_request *r, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < r->nheaders; i++)
    if (strncasecmp(r->headers[i], name, n) == 0 && r->headers[i][n] == ':') return 1;
  return 0;
}

static int add_header(otsk_http_req *q, const char *line) {
  struct curl_slist *s = curl_slist_append(q->hdrs, line);
  if (s == NULL) return -1;
  q->hdrs = s;
  return 0;
}

#define SETOPT(opt, val) \
  do { if (curl_easy_setopt(e, opt, val) != CURLE_OK) { why = #opt; goto fail; } } while (0)

int otsk_http_submit(otsk_http *h, const otsk_http_request *r, char *err, size_t errlen) {
  const char *why = "out of memory";
  otsk_http_req *q = h->pool;
  if (q) {
    h->pool = q->next;
    h->npool--;
    curl_easy_reset(q->easy);
  } else {
    q = calloc(1, sizeof *q);
    if (q == NULL) goto fail_nomem;
    q->easy = curl_easy_init();
    if (q->easy == NULL) {
      free(q);
      q = NULL;
      why = "curl_easy_init failed";
      goto fail_nomem;
    }
  }
  q->next = q->prev = NULL;
  q->h = h;
  q->id = r->id;
  req_clear(q);
  CURL *e = q->easy;
  for (size_t i = 0; i < r->nheaders; i++)
    if (add_header(q, r->headers[i]) != 0) goto fail;
  /* nothing the caller did not ask for: curl's default Accept, Expect
   * (100-continue on big bodies) and form Content-Type are removed */
  if (!has_header(r, "Accept") && add_header(q, "Accept:") != 0) goto fail;
  if (!has_header(r, "Expect") && add_header(q, "Expect:") != 0) goto fail;
  if (!has_header(r, "Content-Type") && add_header(q, "Content-Type:") != 0) goto fail;
  SETOPT(CURLOPT_URL, r->url);
  SETOPT(CURLOPT_PRIVATE, (void *)q);
  SETOPT(CURLOPT_NOSIGNAL, 1L);
  SETOPT(CURLOPT_ERRORBUFFER, q->error);
  SETOPT(CURLOPT_WRITEFUNCTION, on_body);
  SETOPT(CURLOPT_WRITEDATA, (void *)q);
  SETOPT(CURLOPT_HEADERFUNCTION, on_header);
  SETOPT(CURLOPT_HEADERDATA, (void *)q);
  SETOPT(CURLOPT_HTTPHEADER, q->hdrs);
  SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
  /* big reads: fewer recv calls and write callbacks on large pages */
  SETOPT(CURLOPT_BUFFERSIZE, 256L * 1024);
  SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
  SETOPT(CURLOPT_SSL_VERIFYPEER, h->o.insecure ? 0L : 1L);
  SETOPT(CURLOPT_SSL_VERIFYHOST, h->o.insecure ? 0L : 2L);
  if (h->ca_file) SETOPT(CURLOPT_CAINFO, h->ca_file);
  if (r->timeout_ms > 0) SETOPT(CURLOPT_TIMEOUT_MS, r->timeout_ms);
  if (r->connect_timeout_ms > 0) SETOPT(CURLOPT_CONNECTTIMEOUT_MS, r->connect_timeout_ms);
  const char *method = r->method ? r->method : "POST";
  if (strcmp(method, "POST") == 0) {
    SETOPT(CURLOPT_POST, 1L);
  } else if (strcmp(method, "GET") == 0 && r->body_len == 0) {
    SETOPT(CURLOPT_HTTPGET, 1L);
  } else {
    SETOPT(CURLOPT_CUSTOMREQUEST, method);
  }
  if (strcmp(method, "POST") == 0 || r->body_len > 0) {
    SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    SETOPT(CURLOPT_COPYPOSTFIELDS, r->body_len ? r->body : "");
  }
  if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
    why = "curl_multi_add_handle failed";
    goto fail;
  }
  q->next = h->active;
  if (h->active) h->active->prev = q;
  h->active = q;
  h->nactive++;
  return 0;
fail:
  if (err && errlen) snprintf(err, errlen, "cannot start the request: %s", why);
  otsk_http_release(h, q);
  return -1;
fail_nomem:
  set_err(err, errlen, why);
  return -1;
}

static int classify(CURLcode rc, otsk_http_req *q) {
  curl_off_t sent = 0;
  long reqsize = 0;
  (void)sent;
  curl_easy_getinfo(q->easy, CURLINFO_REQUEST_SIZE, &reqsize);
  switch (rc) {
  case CURLE_OK: return OTSK_HTTP_OK;
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_COULDNT_CONNECT:
    return OTSK_HTTP_CONNECT;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
    return OTSK_HTTP_TLS;
  case CURLE_WRITE_ERROR:
    if (q->too_large) return OTSK_HTTP_TOO_LARGE;
    return OTSK_HTTP_OTHER;
  case CURLE_OPERATION_TIMEDOUT:
    /* nothing of the request went out: it timed out connecting */
    return reqsize == 0 ? OTSK_HTTP_CONNECT : OTSK_HTTP_TIMEOUT;
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    return reqsize == 0 ? OTSK_HTTP_CONNECT : OTSK_HTTP_NETWORK;
  default:
    return OTSK_HTTP_OTHER;
  }
}

/* Moves finished transfers from active to done. */
static void collect(otsk_http *h) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(h->multi, &left)) != NULL) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL *e = m->easy_handle;
    CURLcode rc = m->data.result;
    otsk_http_req *q = NULL;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&q);
    if (q == NULL) continue;
    q->failure = classify(rc, q);
    if (rc != CURLE_OK && q->error[0] == '\0')
      snprintf(q->error, sizeof q->error, "%s", curl_easy_strerror(rc));
    if (q->failure == OTSK_HTTP_TOO_LARGE)
      snprintf(q->error, sizeof q->error, "response larger than %zu bytes", h->o.max_response);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &q->status);
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &q->connects);
    curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &q->secs);
    if (q->connects > 0) h->connects += (uint64_t)q->connects;
    curl_multi_remove_handle(h->multi, e);
    unlink_active(h, q);
    if (h->done_tail) h->done_tail->next = q;
    else h->done = q;
    h->done_tail = q;
    h->ndone++;
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int otsk_http_wait(otsk_http *h, long timeout_ms, char *err, size_t errlen) {
  int running = 0;
  double deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    CURLMcode mc = curl_multi_perform(h->multi, &running);
    if (mc != CURLM_OK) {
      if (err && errlen) snprintf(err, errlen, "curl_multi_perform: %s", curl_multi_strerror(mc));
      return -1;
    }
    collect(h);
    if (h->ndone > 0 || h->nactive == 0) break;
    double left = deadline - now_ms();
    if (left <= 0) break;
    int nfds = 0;
    mc = curl_multi_poll(h->multi, NULL, 0, (int)(left < 1 ? 1 : left), &nfds);
    if (mc != CURLM_OK) {
      if (err && errlen) snprintf(err, errlen, "curl_multi_poll: %s", curl_multi_strerror(mc));
      return -1;
    }
  }
  return (int)h->ndone;
}

size_t otsk_http_pending(const otsk_http *h) { return h->nactive + h->ndone; }

otsk_http_req *otsk_http_next(otsk_http *h) {
  otsk_http_req *q = h->done;
  if (q == NULL) return NULL;
  h->done = q->next;
  if (h->done == NULL) h->done_tail = NULL;
  q->next = NULL;
  h->ndone--;
  return q;
}

otsk_http_req *otsk_http_take(otsk_http *h, uint64_t id) {
  otsk_http_req *prev = NULL;
  for (otsk_http_req *q = h->done; q; prev = q, q = q->next) {
    if (q->id == id) {
      if (prev) prev->next = q->next;
      else h->done = q->next;
      if (h->done_tail == q) h->done_tail = prev;
      h->ndone--;
      q->next = NULL;
      return q;
    }
  }
  return NULL;
}

int otsk_http_cancel(otsk_http *h, uint64_t id) {
  for (otsk_http_req *q = h->active; q; q = q->next) {
    if (q->id == id) {
      curl_multi_remove_handle(h->multi, q->easy);
      unlink_active(h, q);
      otsk_http_release(h, q);
      return 1;
    }
  }
  otsk_http_req *q = otsk_http_take(h, id);
  if (q == NULL) return 0;
  otsk_http_release(h, q);
  return 1;
}

uint64_t otsk_http_req_id(const otsk_http_req *q) { return q->id; }
int otsk_http_req_failure(const otsk_http_req *q) { return q->failure; }
const char *otsk_http_req_error(const otsk_http_req *q) { return q->error; }
long otsk_http_req_status(const otsk_http_req *q) { return q->status; }
long otsk_http_req_connects(const otsk_http_req *q) { return q->connects; }
double otsk_http_req_seconds(const otsk_http_req *q) { return q->secs; }
uint64_t otsk_http_connects(const otsk_http *h) { return h->connects; }

const char *otsk_http_req_body(const otsk_http_req *q, size_t *len) {
  *len = q->body.len;
  return q->body.p ? q->body.p : "";
}

const char *otsk_http_req_headers(const otsk_http_req *q, size_t *len) {
  *len = q->head.len;
  return q->head.p ? q->head.p : "";
}

int otsk_http_header_next(const char **pos, const char *end, const char **name,
                          size_t *nlen, const char **value, size_t *vlen) {
  const char *p = *pos;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *next = eol ? eol + 1 : end;
    if (eol == NULL) eol = end;
    const char *colon = memchr(p, ':', (size_t)(eol - p));
    if (colon && colon > p && memchr(p, '\r', (size_t)(colon - p)) == NULL) {
      const char *v = colon + 1, *ve = eol;
      /* a CR ends the value (the line's own, or a stray one) */
      const char *cr = memchr(v, '\r', (size_t)(ve - v));
      if (cr) ve = cr;
      while (v < ve && (*v == ' ' || *v == '\t')) v++;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
      *name = p;
      *nlen = (size_t)(colon - p);
      *value = v;
      *vlen = (size_t)(ve - v);
      *pos = next;
      return 1;
    }
    p = next;
  }
  *pos = end;
  return 0;
}
