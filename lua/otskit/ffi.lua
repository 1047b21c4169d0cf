--- otskit.ffi -- the C ABI of otskit.core (csrc/ffi/otskit_ffi.h) loaded
-- through LuaJIT's FFI, so hot calls are JIT-compiled (calls through the
-- Lua C API never are). require "otskit.ffi" -> { lib, ffi } when running
-- under LuaJIT and core.so exports the ABI this module declares, else
-- { why = "<reason>" }. OTSKIT_NO_FFI=1 in the environment turns it off
-- (inside nginx it must be listed with the `env` directive).
local M = {}

-- The declarations between BEGIN CDEF and END CDEF in csrc/ffi/otskit_ffi.h
-- (spec/key_ffi_spec.lua checks they match), after the types they use. The
-- one cdef of otskit: otskit.key and otskit.merge use this module.
M.types = [[
typedef struct otskit_splice otskit_splice;
typedef struct otskit_tuple otskit_tuple;
typedef struct otskit_splice_out { char buf[1024]; size_t len; } otskit_splice_out;
]]
M.cdef = [[
int otskit_ffi_abi(void);
size_t otskit_splice_out_size(void);
double otskit_now(void);
int otskit_parse_int64(const char *s, size_t n, int64_t *out);
int otskit_int64_text(int64_t v, char *out);
void otskit_prefix_encode(int algo, int ndigits, const char *p, size_t n,
                          char *out);
int32_t otskit_bucket_mod(int64_t v, int32_t nb);
int32_t otskit_bucket_hash(int algo, const char *p, size_t n, int32_t nb);
int otskit_splice_put_int(const otskit_splice *sp, int i, int64_t v,
                          otskit_splice_out *o);
int otskit_splice_put_string(const otskit_splice *sp, int i, const char *s,
                             size_t n, otskit_splice_out *o, size_t *bad);
otskit_tuple *otskit_tuple_new(void);
void otskit_tuple_free(otskit_tuple *t);
void otskit_tuple_reset(otskit_tuple *t);
int otskit_tuple_put_nil(otskit_tuple *t, int desc);
int otskit_tuple_put_bytes(otskit_tuple *t, const char *s, size_t n);
int otskit_tuple_put_text(otskit_tuple *t, const char *s, size_t n);
int otskit_tuple_put_int(otskit_tuple *t, int64_t v);
int otskit_tuple_put_double(otskit_tuple *t, double v);
int otskit_tuple_put_bool(otskit_tuple *t, int v);
const char *otskit_tuple_finish(otskit_tuple *t, int desc, size_t *len);
enum { OTSKIT_MERGE_MORE = 0, OTSKIT_MERGE_NEED = 1, OTSKIT_MERGE_END = 2,
       OTSKIT_MERGE_ENOMEM = -1 };
enum { OTSKIT_MERGE_OK = 0, OTSKIT_MERGE_EOOM = -1, OTSKIT_MERGE_ESRC = -2,
       OTSKIT_MERGE_ESTATE = -3, OTSKIT_MERGE_EORDER = -4 };
enum { OTSKIT_SOURCE_PENDING = 0, OTSKIT_SOURCE_ROWS = 1, OTSKIT_SOURCE_DONE = 2 };
typedef struct otskit_merge otskit_merge;
typedef struct otskit_merge_item { int32_t src, row; } otskit_merge_item;
int otskit_merge_begin(otskit_merge *m, int src, size_t nrows);
int otskit_merge_add_n(otskit_merge *m, int src, const char **keys,
                       const size_t *lens, size_t n, size_t *added);
void otskit_merge_end(otskit_merge *m, int src, int done);
void otskit_merge_abort(otskit_merge *m, int src);
int otskit_merge_pull(otskit_merge *m, otskit_merge_item *out, size_t max,
                      size_t *n);
int otskit_merge_need(const otskit_merge *m);
int otskit_merge_state(const otskit_merge *m, int src);
uint64_t otskit_merge_bound(const otskit_merge *m);
void otskit_merge_prefetch(const char **keys, size_t n);
typedef struct otskit_pb_dec otskit_pb_dec;
typedef struct otskit_pb_cell {
  const char *name;
  size_t name_len;
  const char *s;
  size_t n;
  double num;
  double ts;
  int64_t i;
  int64_t ts64;
  int32_t vt;
  int32_t op;
  int32_t has_ts;
  int32_t big;
  int32_t slot;
  int32_t fresh;
  int32_t newest;
  int32_t pad;
} otskit_pb_cell;
typedef struct otskit_pb_names { const char *s[32]; size_t n[32]; } otskit_pb_names;
typedef struct otskit_pb_row {
  const otskit_pb_cell *cells;
  int32_t npk, ncells, deleted, pad;
  size_t attr_at;
} otskit_pb_row;
otskit_pb_dec *otskit_pb_new(void);
void otskit_pb_free(otskit_pb_dec *d);
int otskit_pb_open(otskit_pb_dec *d, const char *buf, size_t n);
int otskit_pb_next(otskit_pb_dec *d, const otskit_pb_names *nm, otskit_pb_row *out);
int otskit_pb_cells(otskit_pb_dec *d, const char *buf, size_t n, size_t off,
                               const otskit_pb_names *nm, otskit_pb_row *out);
int otskit_pb_is(const otskit_pb_cell *c, const char *s, size_t n);
int otskit_pb_order(const otskit_pb_dec *d);
]]
M.abi = 5

local function load()
  if not jit then return nil, "not LuaJIT" end
  local env = os.getenv("OTSKIT_NO_FFI")
  if env and env ~= "" and env ~= "0" then return nil, "OTSKIT_NO_FFI is set" end
  local ok, ffi = pcall(require, "ffi")
  if not ok then return nil, "no ffi module" end
  require "otskit.core"   -- the same file the loader found
  local path = package.searchpath and package.searchpath("otskit.core", package.cpath)
  if not path then return nil, "otskit.core not found on package.cpath" end
  -- declare once per Lua state (a reloaded module must not redeclare)
  if not pcall(ffi.typeof, "otskit_splice_out") then
    local okd, err = pcall(ffi.cdef, M.types .. M.cdef)
    if not okd then return nil, "cdef: " .. tostring(err) end
  end
  local okl, lib = pcall(ffi.load, path)
  if not okl then return nil, "ffi.load: " .. tostring(lib) end
  local oks, err = pcall(function()
    assert(lib.otskit_ffi_abi() == M.abi, "ABI version differs")
    assert(tonumber(lib.otskit_splice_out_size()) == ffi.sizeof("otskit_splice_out"),
           "otskit_splice_out size differs")
    for name in M.cdef:gmatch("(otskit_[%w_]+)%(") do assert(lib[name], name) end
  end)
  if not oks then return nil, "core.so: " .. tostring(err) end
  return lib, ffi
end

local lib, ffi = load()
if lib then
  M.lib, M.ffi = lib, ffi
else
  M.why = ffi
end
return M
