/* lkv.h -- what other bindings use of lkv.c (the kv db userdata), and the
 * db methods lrowstream.c defines. */
#ifndef OTSKIT_LKV_H
#define OTSKIT_LKV_H

#include "compat.h"
#include "kv.h"

/* The open kv db at argument 1 (raises when it is closed or not a db). */
kv_db *otsk_kv_checkdb(lua_State *L);
/* The table named by argument 2, or NULL after pushing nil, msg, code. */
kv_table *otsk_kv_checktable(lua_State *L, kv_db *db);
/* Pushes nil, msg, code for db's last failure; returns 3. */
int otsk_kv_fail(lua_State *L, kv_db *db);
/* Pushes a cursor userdata of the db at argument 1 (closed by its __gc,
 * keeps the db alive) and returns its cursor, not yet scanning. */
kv_cursor *otsk_kv_pushcursor(lua_State *L);

/* db:get_pb / db:range_pb (lrowstream.c) */
int otsk_kv_get_pb(lua_State *L);
int otsk_kv_range_pb(lua_State *L);
/* The cursor userdata of this Lua state that db:range_pb reuses (no
 * object with a finalizer per call), pushed, closed if an error left it
 * open, tied to the db at argument 1; _done closes it and unties it. */
kv_cursor *otsk_kv_scratchcursor(lua_State *L);
void otsk_kv_scratchcursor_done(lua_State *L, int idx);
/* kv.get_plan, db:get_row_answer and the plan class they use (lgetrow.c) */
int otsk_kv_get_plan(lua_State *L);
int otsk_kv_get_row_answer(lua_State *L);
void otsk_kv_getrow_register(lua_State *L);
/* row.from_put_pb (lrowstream.c) */
int otsk_row_from_put_pb(lua_State *L);

#endif
