/* http_test.c -- the plain C parts of http.c that need no server: header
 * block parsing (the peer's bytes), sessions with nothing in flight
 * (wait returns at once, no sleeping), and a refused connection
 * classified as never sent. The transfer paths are covered against a
 * local server by spec/http_spec.lua. */
#include <string.h>

#include "check.h"
#include "http.h"

static void headers(void) {
  const char *block = "Content-Length: 12\r\nx-ots-requestid:  abc \r\nbogus line\r\n:novalue\r\n"
                      "X-Empty:\r\nx-cr: a\rb\r\n\r\n";
  const char *p = block, *end = block + strlen(block), *n, *v;
  size_t nl, vl;
  CHECK(otsk_http_header_next(&p, end, &n, &nl, &v, &vl) == 1);
  CHECK(nl == 14 && memcmp(n, "Content-Length", 14) == 0 && vl == 2 && memcmp(v, "12", 2) == 0);
  CHECK(otsk_http_header_next(&p, end, &n, &nl, &v, &vl) == 1);
  CHECK(nl == 15 && vl == 3 && memcmp(v, "abc", 3) == 0);
  CHECK(otsk_http_header_next(&p, end, &n, &nl, &v, &vl) == 1);   /* "bogus line", ":novalue" skipped */
  CHECK(nl == 7 && memcmp(n, "X-Empty", 7) == 0 && vl == 0);
  CHECK(otsk_http_header_next(&p, end, &n, &nl, &v, &vl) == 1);
  CHECK(nl == 4 && vl == 1 && v[0] == 'a');                        /* a stray CR ends the value */
  CHECK(otsk_http_header_next(&p, end, &n, &nl, &v, &vl) == 0);
  CHECK(p == end);
  p = end;
  CHECK(otsk_http_header_next(&p, end, &n, &nl, &v, &vl) == 0);
}

static void idle_and_refused(void) {
  char err[256];
  otsk_http_opts o;
  memset(&o, 0, sizeof o);
  otsk_http *h = otsk_http_new(&o, err, sizeof err);
  CHECK(h != NULL);
  if (!h) return;
  CHECK(otsk_http_wait(h, 100000, err, sizeof err) == 0);   /* nothing in flight: at once */
  CHECK(otsk_http_pending(h) == 0);
  CHECK(otsk_http_next(h) == NULL);
  /* port 1 on loopback: refused (nothing listens there unprivileged) */
  otsk_http_request r;
  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.url = "http://127.0.0.1:1/x";
  r.body = "abc";
  r.body_len = 3;
  r.timeout_ms = 5000;
  r.id = 42;
  CHECK(otsk_http_submit(h, &r, err, sizeof err) == 0);
  CHECK(otsk_http_pending(h) == 1);
  int n = 0;
  for (int i = 0; i < 50 && n == 0; i++) n = otsk_http_wait(h, 200, err, sizeof err);
  CHECK(n == 1);
  otsk_http_req *q = otsk_http_take(h, 42);
  CHECK(q != NULL);
  if (q) {
    CHECK(otsk_http_req_id(q) == 42);
    CHECK(otsk_http_req_failure(q) == OTSK_HTTP_CONNECT);
    CHECK(strlen(otsk_http_req_error(q)) > 0);
    otsk_http_release(h, q);
  }
  CHECK(otsk_http_cancel(h, 42) == 0);
  /* a request still in flight is freed with the session */
  r.url = "http://10.255.255.1:9/x";   /* unroutable: stays connecting */
  r.id = 7;
  CHECK(otsk_http_submit(h, &r, err, sizeof err) == 0);
  otsk_http_free(h);
}

int main(void) {
  headers();
  idle_and_refused();
  return check_done();
}
