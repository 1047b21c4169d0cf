/* parts.h -- the parts of the C core. Each part's binding defines
 * int otsk_open_<part>(lua_State *L), which pushes its table; otskit.c
 * sets it as otskit.core.<part>. Add a part: one X() line. */
#ifndef OTSKIT_PARTS_H
#define OTSKIT_PARTS_H

#define OTSKIT_PARTS(X) \
  X(hash) \
  X(backoff) \
  X(key) \
  X(frame) \
  X(chunk) \
  X(merge) \
  X(kv) \
  X(sql) \
  X(sqlq) \
  X(row) \
  X(resume) \
  X(wire) \
  X(http) \
  X(vec) \
  X(dv)

#define OTSKIT_DECLARE_PART(name) int otsk_open_##name(lua_State *L);
OTSKIT_PARTS(OTSKIT_DECLARE_PART)

#endif
