#!/bin/sh
# examples/run.sh NAME [lua5.4|luajit] -- runs examples/NAME.lua from a checkout.
n=${1:?usage: sh examples/run.sh NAME [lua5.4|luajit]}; i=${2:-lua5.4}
if [ "$i" = luajit ]; then
  LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/jit/?.so;;" exec luajit "examples/${n%.lua}.lua"
fi
LUA_PATH_5_4="lua/?.lua;lua/?/init.lua;;" LUA_CPATH_5_4="build/5.4/?.so;;" exec lua5.4 "examples/${n%.lua}.lua"
