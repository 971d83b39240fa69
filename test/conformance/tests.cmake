# The official MCP conformance suite against `luamcp --http` (see
# test/conformance/run.sh). Needs npm and the npm registry on first use:
# Node 22 and the suite are cached in ${XDG_CACHE_HOME:-~/.cache}/luamcp-conformance
# (LUAMCP_NODE_CACHE). LUAMCP_SKIP_NODE=1 in ctest's environment skips them.
foreach(suite active pending)
  add_test(NAME conformance.${suite}
    COMMAND sh ${CMAKE_SOURCE_DIR}/test/conformance/run.sh ${suite}
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(conformance.${suite} PROPERTIES
    ENVIRONMENT "LUAMCP_BIN=$<TARGET_FILE:luamcp>"
    SKIP_REGULAR_EXPRESSION "conformance: SKIPPED"
    TIMEOUT 900)
endforeach()
