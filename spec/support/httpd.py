#!/usr/bin/env python3
"""A tiny HTTP/1.1 test server for the http binding's spec: keep-alive,
threads, and a few behaviours chosen by path. Listens on 127.0.0.1, a free
port, printed on stdout as its first line; exits when stdin closes.
With two arguments (a certificate and its key, PEM) it speaks HTTPS.

  /echo       200, the request body back; headers x-echo-<name> for each
              request header, x-conn = the connection's number
  /delay/MS   like /echo after MS milliseconds
  /chunked    200, a chunked body of 3 chunks ("a" * 1000 each)
  /status/N   status N, body "status N"
  /close      200 then closes the connection
  /big/N      200, N bytes of "x"
"""
import sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

conns = [0]
lock = threading.Lock()

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def setup(self):
        super().setup()
        with lock:
            conns[0] += 1
            self.conn_no = conns[0]
    def body(self):
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""
    def send(self, status, body, extra=()):
        self.send_response(status)
        for k, v in extra: self.send_header(k, v)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def handle_any(self):
        b = self.body()
        p = self.path
        echo = [("x-echo-" + k.lower(), v) for k, v in self.headers.items()]
        echo += [("x-conn", str(self.conn_no)), ("x-method", self.command)]
        if p.startswith("/delay/"):
            time.sleep(int(p[7:]) / 1000.0)
            return self.send(200, b, echo)
        if p == "/echo": return self.send(200, b, echo)
        if p.startswith("/status/"):
            n = int(p[8:]); return self.send(n, b"status %d" % n)
        if p.startswith("/big/"): return self.send(200, b"x" * int(p[5:]))
        if p == "/close":
            self.close_connection = True
            return self.send(200, b"bye", [("connection", "close")])
        if p == "/chunked":
            self.send_response(200)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for _ in range(3):
                self.wfile.write(b"3e8\r\n" + b"a" * 1000 + b"\r\n"); self.wfile.flush()
                time.sleep(0.005)
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send(404, b"no such path")
    do_GET = do_POST = do_PUT = handle_any

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
if len(sys.argv) == 3:  # httpd.py CERT KEY: HTTPS
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[1], sys.argv[2])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
threading.Thread(target=srv.serve_forever, daemon=True).start()
sys.stdin.read()
