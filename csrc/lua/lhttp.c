/* lhttp.c -- Lua binding of http.c: otskit.core.http, an HTTP client with
 * many requests in flight and kept-alive connections.
 *
 *   local s = http.new{ verify = true, ca_file = nil, max_host_connections = 0,
 *                       max_total_connections = 0, max_response = 64 MiB }
 *   local id = s:submit{ url =, method = "POST", headers = {name = value},
 *                        body = "", timeout = secs, connect_timeout = secs }
 *   local done = s:wait(secs)      -- list of results finished meanwhile
 *   local r = s:request{...}       -- submit, then wait for that one
 *
 * A result: { id, status, body, headers = {lowercased name = value},
 * connects, seconds } or, when no response arrived, { id, failure =
 * "connect"|"timeout"|"network"|"tls"|"too_large"|"other", error = text }.
 * "connect" means the request was never sent. The session is closed by
 * s:close(), __gc or __close; what is in flight is aborted. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat.h"
#include "http.h"
#include "laux.h"
#include "parts.h"

#define SESSION_MT "otskit.http.session"
#define MAX_HEADERS 64

typedef struct {
  otsk_http *h;
  uint64_t next_id;
} lsession;

static otsk_http *checksession(lua_State *L) {
  lsession *u = (lsession *)luaL_checkudata(L, 1, SESSION_MT);
  if (u->h == NULL) otsk_error(L, "http", "session is closed");
  return u->h;
}

/* Raises on keys of the table at idx that are not in allowed. */
static void check_keys(lua_State *L, int idx, const char *const *allowed, const char *what) {
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    int ok = 0;
    if (lua_type(L, -1) == LUA_TSTRING) {
      const char *k = lua_tostring(L, -1);
      for (int i = 0; allowed[i]; i++)
        if (strcmp(k, allowed[i]) == 0) { ok = 1; break; }
    }
    if (!ok) {
      const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
      otsk_error(L, "http", "%s: unknown option '%s'", what, k);
    }
  }
}

/* A seconds field as milliseconds (rounded up), 0 when absent. */
#define HTTP_MAX_SECONDS 86400.0

static long ms_field(lua_State *L, int idx, const char *field) {
  long ms = 0;
  lua_getfield(L, idx, field);
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TNUMBER) otsk_error(L, "http", "%s must be a number of seconds", field);
    double s = lua_tonumber(L, -1);
    /* at most a day: 86 400 000 ms fits a 32-bit long (CURLOPT_TIMEOUT_MS) */
    if (!(s > 0) || s > HTTP_MAX_SECONDS)
      otsk_error(L, "http", "%s must be a number of seconds in (0, 86400]", field);
    ms = (long)ceil(s * 1000.0);
  }
  lua_pop(L, 1);
  return ms;
}

static const char *const NEW_KEYS[] = { "verify", "ca_file", "max_host_connections",
  "max_total_connections", "max_response", NULL };

/* http.new([opts]) -> session | nil, msg, "HTTPError" */
static int l_new(lua_State *L) {
  otsk_http_opts o;
  memset(&o, 0, sizeof o);
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    check_keys(L, 1, NEW_KEYS, "new");
    lua_getfield(L, 1, "verify");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TBOOLEAN)
      otsk_error(L, "http", "verify must be a boolean");
    o.insecure = lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, 1, "ca_file");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
      otsk_error(L, "http", "ca_file must be a path");
    o.ca_file = lua_tostring(L, -1);  /* copied by otsk_http_new; stays on the stack */
    o.max_host_connections = (long)otsk_optintfield(L, 1, "max_host_connections", 0, 0, 100000, "http");
    o.max_total_connections = (long)otsk_optintfield(L, 1, "max_total_connections", 0, 0, 100000, "http");
    o.max_response = (size_t)otsk_optintfield(L, 1, "max_response", 0, 0, (int64_t)1 << 40, "http");
  }
  char err[256];
  lsession *u = (lsession *)lua_newuserdatauv(L, sizeof *u, 0);
  u->h = NULL;
  u->next_id = 1;
  luaL_getmetatable(L, SESSION_MT);
  lua_setmetatable(L, -2);
  u->h = otsk_http_new(&o, err, sizeof err);
  if (u->h == NULL) return otsk_fail(L, "HTTPError", "%s", err);
  return 1;
}

static int l_close(lua_State *L) {
  lsession *u = (lsession *)luaL_checkudata(L, 1, SESSION_MT);
  if (u->h) {
    otsk_http_free(u->h);
    u->h = NULL;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static const char *const REQ_KEYS[] = { "url", "method", "headers", "body", "timeout",
  "connect_timeout", NULL };

/* s:submit(req) -> id | nil, msg, "HTTPError" */
static int l_submit(lua_State *L) {
  lsession *u = (lsession *)luaL_checkudata(L, 1, SESSION_MT);
  otsk_http *h = checksession(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  check_keys(L, 2, REQ_KEYS, "submit");
  otsk_http_request r;
  memset(&r, 0, sizeof r);
  lua_getfield(L, 2, "url");
  if (lua_type(L, -1) != LUA_TSTRING) otsk_error(L, "http", "submit: url must be a string");
  r.url = lua_tostring(L, -1);
  lua_getfield(L, 2, "method");
  if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING) otsk_error(L, "http", "submit: method must be a string");
  r.method = lua_isnil(L, -1) ? "POST" : lua_tostring(L, -1);
  lua_getfield(L, 2, "body");
  if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING) otsk_error(L, "http", "submit: body must be a string");
  r.body = lua_tolstring(L, -1, &r.body_len);
  if (r.body == NULL) r.body_len = 0;
  r.timeout_ms = ms_field(L, 2, "timeout");
  r.connect_timeout_ms = ms_field(L, 2, "connect_timeout");
  /* headers: {name = value}; lines built in a Lua buffer table kept on the stack */
  const char *lines[MAX_HEADERS];
  lua_getfield(L, 2, "headers");
  int hidx = lua_gettop(L);
  lua_newtable(L);
  int keep = lua_gettop(L);
  if (!lua_isnil(L, hidx)) {
    if (!lua_istable(L, hidx)) otsk_error(L, "http", "submit: headers must be a table");
    lua_pushnil(L);
    while (lua_next(L, hidx)) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
        otsk_error(L, "http", "submit: headers must map names to string values");
      const char *k = lua_tostring(L, -2), *v = lua_tostring(L, -1);
      for (const char *p = k; *p; p++)
        if (*p == ':' || *p == '\r' || *p == '\n' || *p == ' ')
          otsk_error(L, "http", "submit: bad header name '%s'", k);
      for (const char *p = v; *p; p++)
        if (*p == '\r' || *p == '\n') otsk_error(L, "http", "submit: header '%s' has a line break", k);
      if (r.nheaders >= MAX_HEADERS) otsk_error(L, "http", "submit: more than %d headers", MAX_HEADERS);
      /* curl drops "Name:" with an empty value; "Name;" sends it empty */
      if (*v) lua_pushfstring(L, "%s: %s", k, v);
      else lua_pushfstring(L, "%s;", k);
      lines[r.nheaders] = lua_tostring(L, -1);
      lua_rawseti(L, keep, (int)r.nheaders + 1);
      r.nheaders++;
      lua_pop(L, 1);
    }
  }
  r.headers = lines;
  r.id = u->next_id++;
  char err[256];
  if (otsk_http_submit(h, &r, err, sizeof err) != 0) return otsk_fail(L, "HTTPError", "%s", err);
  otsk_pushint64(L, (int64_t)r.id);
  return 1;
}

static const char *failure_name(int f) {
  switch (f) {
  case OTSK_HTTP_CONNECT: return "connect";
  case OTSK_HTTP_TIMEOUT: return "timeout";
  case OTSK_HTTP_NETWORK: return "network";
  case OTSK_HTTP_TLS: return "tls";
  case OTSK_HTTP_TOO_LARGE: return "too_large";
  default: return "other";
  }
}

/* Pushes the header block as {lowercased name = trimmed value}; repeated
 * names are joined with ", ". */
static void push_headers(lua_State *L, const char *p, size_t len) {
  lua_newtable(L);
  const char *end = p + len, *name, *v;
  size_t n, vn;
  char lname[256];
  while (otsk_http_header_next(&p, end, &name, &n, &v, &vn)) {
    if (n >= sizeof lname) continue;
    for (size_t i = 0; i < n; i++) lname[i] = (char)tolower((unsigned char)name[i]);
    lua_pushlstring(L, lname, n);
    lua_pushvalue(L, -1);
    lua_rawget(L, -3);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_pushlstring(L, v, vn);
    } else {
      lua_pushliteral(L, ", ");
      lua_pushlstring(L, v, vn);
      lua_concat(L, 3);
    }
    lua_rawset(L, -3);
  }
}

/* Pushes the result table of q and releases q. */
static void push_result(lua_State *L, otsk_http *h, otsk_http_req *q) {
  lua_createtable(L, 0, 8);
  otsk_pushint64(L, (int64_t)otsk_http_req_id(q));
  lua_setfield(L, -2, "id");
  int f = otsk_http_req_failure(q);
  lua_pushinteger(L, otsk_http_req_connects(q));
  lua_setfield(L, -2, "connects");
  lua_pushnumber(L, otsk_http_req_seconds(q));
  lua_setfield(L, -2, "seconds");
  if (f != OTSK_HTTP_OK) {
    lua_pushstring(L, failure_name(f));
    lua_setfield(L, -2, "failure");
    lua_pushstring(L, otsk_http_req_error(q));
    lua_setfield(L, -2, "error");
  } else {
    size_t n;
    const char *b;
    lua_pushinteger(L, otsk_http_req_status(q));
    lua_setfield(L, -2, "status");
    b = otsk_http_req_body(q, &n);
    lua_pushlstring(L, b, n);
    lua_setfield(L, -2, "body");
    b = otsk_http_req_headers(q, &n);
    push_headers(L, b, n);
    lua_setfield(L, -2, "headers");
  }
  otsk_http_release(h, q);
}

static long check_wait(lua_State *L, int idx) {
  lua_Number s = luaL_checknumber(L, idx);
  if (!(s >= 0)) otsk_error(L, "http", "wait: timeout must be >= 0 seconds");
  if (s > 2147483.0) s = 2147483.0;
  return (long)ceil(s * 1000.0);
}

/* s:wait(secs) -> list of results finished (possibly empty) | nil, msg, "HTTPError".
 * Returns as soon as one request has finished, or after secs. */
static int l_wait(lua_State *L) {
  otsk_http *h = checksession(L);
  long ms = check_wait(L, 2);
  char err[256];
  if (otsk_http_wait(h, ms, err, sizeof err) < 0) return otsk_fail(L, "HTTPError", "%s", err);
  lua_newtable(L);
  int i = 0;
  otsk_http_req *q;
  while ((q = otsk_http_next(h)) != NULL) {
    push_result(L, h, q);
    lua_rawseti(L, -2, ++i);
  }
  return 1;
}

/* s:take(id) -> result | nil: the finished request with that id, if any
 * (after a wait; results not taken stay for the next wait/take). */
static int l_take(lua_State *L) {
  otsk_http *h = checksession(L);
  int64_t id = otsk_checkint64(L, 2, "http", "id");
  otsk_http_req *q = otsk_http_take(h, (uint64_t)id);
  if (q == NULL) return 0;
  push_result(L, h, q);
  return 1;
}

/* s:poll(secs) -> number of finished requests waiting to be taken */
static int l_poll(lua_State *L) {
  otsk_http *h = checksession(L);
  long ms = check_wait(L, 2);
  char err[256];
  int n = otsk_http_wait(h, ms, err, sizeof err);
  if (n < 0) return otsk_fail(L, "HTTPError", "%s", err);
  lua_pushinteger(L, n);
  return 1;
}

/* s:request(req) -> result | nil, msg, "HTTPError": submits and waits for
 * this request (others in flight keep running and stay collectable). */
static int l_request(lua_State *L) {
  otsk_http *h = checksession(L);
  lua_settop(L, 2);
  lua_pushcfunction(L, l_submit);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 2, 3);
  if (lua_isnil(L, -3)) return 3;
  int64_t id;
  const char *why;
  otsk_toint64(L, -3, &id, &why);
  char err[256];
  for (;;) {
    otsk_http_req *q = otsk_http_take(h, (uint64_t)id);
    if (q) {
      push_result(L, h, q);
      return 1;
    }
    /* the request carries its own timeout; the poll wakes on any progress */
    if (otsk_http_wait(h, 1000, err, sizeof err) < 0) {
      otsk_http_cancel(h, (uint64_t)id);
      return otsk_fail(L, "HTTPError", "%s", err);
    }
  }
}

/* s:cancel(id) -> whether it was there */
static int l_cancel(lua_State *L) {
  otsk_http *h = checksession(L);
  int64_t id = otsk_checkint64(L, 2, "http", "id");
  lua_pushboolean(L, otsk_http_cancel(h, (uint64_t)id));
  return 1;
}

static int l_pending(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)otsk_http_pending(checksession(L)));
  return 1;
}

/* s:connects() -> new TCP connections opened so far */
static int l_connects(lua_State *L) {
  otsk_pushint64(L, (int64_t)otsk_http_connects(checksession(L)));
  return 1;
}

/* http.time() -> seconds since the epoch, with milliseconds (the wall
 * clock, for x-ots-date) */
static int l_time(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)(ts.tv_nsec / 1000000) / 1000.0);
  return 1;
}

static const luaL_Reg methods[] = {
  {"submit", l_submit}, {"wait", l_wait}, {"poll", l_poll}, {"take", l_take},
  {"request", l_request}, {"cancel", l_cancel}, {"pending", l_pending},
  {"connects", l_connects}, {"close", l_close}, {NULL, NULL}};
static const luaL_Reg metamethods[] = {{"__gc", l_close}, {"__close", l_close}, {NULL, NULL}};

int otsk_open_http(lua_State *L) {
  otsk_newclass(L, SESSION_MT, methods, metamethods);
  lua_newtable(L);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, -2, "new");
  lua_pushcfunction(L, l_time);
  lua_setfield(L, -2, "time");
  return 1;
}
