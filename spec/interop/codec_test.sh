#!/bin/sh
# The codec cross-check with the official Node.js SDK (run by run.sh):
# the SDK encodes the corpus (codec.js), otskit compares its own bytes and
# decodes the SDK's (codec.lua, under lua5.4 and luajit), then the SDK's
# readers read otskit's requests and decode otskit's responses.
set -u
B=${OTSKIT_BUILD:-build}
out=build/interop
mkdir -p $out
export NODE_PATH=build/node/node_modules
pass=0; fail=0
add() { # $1: output with a "N passed, N failed" line
  printf '%s\n' "$1" | grep -v '^[0-9]* passed, [0-9]* failed$'
  line=$(printf '%s\n' "$1" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [ -z "$line" ]; then fail=$((fail + 1)); return; fi
  pass=$((pass + $(echo "$line" | cut -d' ' -f1))); fail=$((fail + $(echo "$line" | cut -d' ' -f3)))
}
if ! node spec/interop/codec.js encode > $out/sdk.json; then
  echo "codec: the SDK failed to encode the corpus"; echo "0 passed, 1 failed"; exit 1
fi
add "$(LUA_PATH_5_4="lua/?.lua;lua/?/init.lua;;" LUA_CPATH_5_4="$B/5.4/?.so;;" \
       lua5.4 spec/interop/codec.lua $out/sdk.json $out/otskit.json 2>&1)"
add "$(LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="$B/jit/?.so;;" \
       luajit spec/interop/codec.lua $out/sdk.json $out/otskit-jit.json 2>&1)"
add "$(node spec/interop/codec.js check $out/otskit.json 2>&1)"
add "$(node spec/interop/codec.js check $out/otskit-jit.json 2>&1)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
