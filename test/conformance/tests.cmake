# The official MCP conformance suite against ONE `luamcp --http` process (see
# test/conformance/run.sh), as a ctest fixture:
#
#   conformance.start        starts the server (FIXTURES_SETUP)
#   conformance.2025-11-25   --requirements 2025-11-25 against it
#   conformance.2026-07-28   --requirements 2026-07-28 against it
#   conformance.tasks        each tasks-* extension scenario against it
#   conformance.stop         SIGTERM: it must exit 0, with no sanitizer report (FIXTURES_CLEANUP)
#
# One ctest test per set, so that each reports on its own (a 2025-11-25
# regression shows while 2026-07-28 is still being built); `ctest -R
# conformance.tasks` brings start and stop along. With `ctest -j` the sets run
# against the server at the same time. The logs, checks.json files, the
# server's log and its state stay in build/conformance/.
#
# Needs npm and the npm registry on first use: Node 22 and the suite are
# cached in ${XDG_CACHE_HOME:-~/.cache}/luamcp-conformance (LUAMCP_NODE_CACHE).
# LUAMCP_SKIP_NODE=1 in ctest's environment skips them.
# conformance.lua_path.* runs the same sets against a second server on the
# Lua path (LUAMCP_LUA_PATH=1: every method through server.lua, as when a
# middleware covers them all), its state in build/conformance-lua/.
function(luamcp_conformance_test prefix out env name timeout)
  add_test(NAME ${prefix}.${name}
    COMMAND sh ${CMAKE_SOURCE_DIR}/test/conformance/run.sh ${ARGN}
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(${prefix}.${name} PROPERTIES
    ENVIRONMENT "LUAMCP_BIN=$<TARGET_FILE:luamcp>;LUAMCP_CONFORMANCE_OUT=${CMAKE_BINARY_DIR}/${out};${env}"
    SKIP_REGULAR_EXPRESSION "conformance: SKIPPED"
    TIMEOUT ${timeout})
endfunction()

function(luamcp_conformance prefix out env)
  luamcp_conformance_test(${prefix} ${out} "${env}" start 300 start)
  set_tests_properties(${prefix}.start PROPERTIES FIXTURES_SETUP ${prefix}_server FIXTURES_REQUIRED node_cache)
  foreach(set 2025-11-25 2026-07-28 tasks)
    luamcp_conformance_test(${prefix} ${out} "${env}" ${set} 600 --shared ${set})
    set_tests_properties(${prefix}.${set} PROPERTIES FIXTURES_REQUIRED ${prefix}_server)
  endforeach()
  luamcp_conformance_test(${prefix} ${out} "${env}" stop 60 stop)
  set_tests_properties(${prefix}.stop PROPERTIES FIXTURES_CLEANUP ${prefix}_server)
endfunction()

luamcp_conformance(conformance conformance "LUAMCP_LUA_PATH=")
luamcp_conformance(conformance.lua_path conformance-lua "LUAMCP_LUA_PATH=1")
