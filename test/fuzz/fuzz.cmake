# Fuzz targets (test/fuzz/README.md). Under clang each is a libFuzzer
# binary (`make fuzz` builds build-fuzz with clang and runs them); under gcc
# each gets replay.c's main. Either way ctest replays its committed corpus,
# under ASan and UBSan (as luamcp-asan; none when LUAMCP_ASAN is off).
set(LUAMCP_FUZZ_SAN)
if(LUAMCP_ASAN OR CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(LUAMCP_FUZZ_SAN -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
endif()
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(LUAMCP_FUZZ_MAIN -fsanitize=fuzzer)          # libFuzzer's main
  set(LUAMCP_FUZZ_LIB -fsanitize=fuzzer-no-link)   # coverage for code linked into a target
else()
  set(LUAMCP_FUZZ_MAIN)
  set(LUAMCP_FUZZ_LIB)
endif()
add_custom_target(fuzz-targets)

# The server but main.c, for the targets that need most of it.
set(LUAMCP_FUZZ_CORE_SOURCES ${LUAMCP_SOURCES})
list(FILTER LUAMCP_FUZZ_CORE_SOURCES EXCLUDE REGEX "src/main\\.c$")
add_library(luamcp-fuzzcore STATIC EXCLUDE_FROM_ALL ${LUAMCP_FUZZ_CORE_SOURCES})
target_compile_options(luamcp-fuzzcore PRIVATE ${LUAMCP_WARN} ${LUAMCP_QUOTE} ${LUAMCP_FUZZ_SAN} ${LUAMCP_FUZZ_LIB})
target_compile_definitions(luamcp-fuzzcore PRIVATE
  LUAMCP_VERSION="${PROJECT_VERSION}"
  LUAMCP_LUA_DIR="${CMAKE_SOURCE_DIR}/lua")
target_include_directories(luamcp-fuzzcore PRIVATE ${HTTP_PARSER_INCLUDE})
target_link_libraries(luamcp-fuzzcore PUBLIC PkgConfig::LUA PkgConfig::UV PkgConfig::JANSSON PkgConfig::CURL PkgConfig::HIREDIS
                      PkgConfig::SQLITE OpenSSL::Crypto ${HTTP_PARSER_LIB} m)

# luamcp_fuzz(name [sources...]): test/fuzz/name.c with the sources it
# tests (or luamcp-fuzzcore), and the test fuzz.name replaying
# test/fuzz/corpus/name.
function(luamcp_fuzz name)
  set(corpus ${CMAKE_SOURCE_DIR}/test/fuzz/corpus/${name})
  add_executable(${name} test/fuzz/${name}.c ${ARGN})
  target_compile_options(${name} PRIVATE ${LUAMCP_WARN} ${LUAMCP_QUOTE} ${LUAMCP_FUZZ_SAN} ${LUAMCP_FUZZ_MAIN})
  target_link_options(${name} PRIVATE ${LUAMCP_FUZZ_SAN} ${LUAMCP_FUZZ_MAIN})
  target_compile_definitions(${name} PRIVATE LUAMCP_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  target_include_directories(${name} PRIVATE ${HTTP_PARSER_INCLUDE})
  target_link_libraries(${name} PRIVATE PkgConfig::LUA PkgConfig::UV PkgConfig::JANSSON OpenSSL::Crypto
                        ${HTTP_PARSER_LIB} m)
  if(LUAMCP_FUZZ_MAIN)
    add_test(NAME fuzz.${name} COMMAND ${name} -runs=0 ${corpus})
  else()
    target_sources(${name} PRIVATE test/fuzz/replay.c)
    add_test(NAME fuzz.${name} COMMAND ${name} ${corpus})
  endif()
  set_tests_properties(fuzz.${name} PROPERTIES TIMEOUT 120
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  add_dependencies(fuzz-targets ${name})
endfunction()

luamcp_fuzz(fuzz_json src/util/json.c src/util/jparse.c src/util/buf.c src/util/log.c)
luamcp_fuzz(fuzz_seal src/util/base64.c src/util/crypto.c src/util/seal.c src/util/buf.c)
luamcp_fuzz(fuzz_sse src/util/sse.c src/util/buf.c)
luamcp_fuzz(fuzz_jwt src/util/jwt.c src/util/jwk.c src/util/base64.c src/util/buf.c)
target_include_directories(fuzz_jwt PRIVATE ${CMAKE_SOURCE_DIR}/test)
luamcp_fuzz(fuzz_http test/fuzz/responses.c src/net/http.c src/net/http_status.c src/util/buf.c src/util/log.c src/util/metrics.c)
luamcp_fuzz(fuzz_uri_template)
luamcp_fuzz(fuzz_headers test/fuzz/server.c)
target_link_libraries(fuzz_headers PRIVATE luamcp-fuzzcore)
luamcp_fuzz(fuzz_session test/fuzz/server.c)
target_link_libraries(fuzz_session PRIVATE luamcp-fuzzcore)
luamcp_fuzz(fuzz_transport test/fuzz/server.c test/fuzz/responses.c)
target_link_libraries(fuzz_transport PRIVATE luamcp-fuzzcore)
