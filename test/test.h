/* A minimal test harness: CHECK records failures, main returns their count. */
#ifndef MCP_TEST_H
#define MCP_TEST_H

#include <stdio.h>

static int test_failures, test_checks;

#define CHECK(cond, ...) do { \
    test_checks++; \
    if (!(cond)) { \
      test_failures++; \
      fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__); \
      fputc('\n', stderr); \
    } \
  } while (0)

/* libuv's habit: a test ends by running its loop until nothing is left and
 * closing it, which fails while any handle is still open. */
#define CHECK_LOOP_EMPTY(loop) do { \
    uv_run((loop), UV_RUN_DEFAULT); \
    CHECK(uv_loop_close(loop) == 0, "the loop still has open handles"); \
  } while (0)

#define TEST_END(name) do { \
    printf("%s: %d checks, %d passed, %d failed\n", name, test_checks, \
           test_checks - test_failures, test_failures); \
    return test_failures != 0; \
  } while (0)

#endif
