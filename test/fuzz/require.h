/* REQUIRE(cond, fmt, ...): a fuzz target's own check. A failure names the
 * target and the condition, then aborts, which libFuzzer (and replay.c)
 * reports as a finding with the input that caused it. */
#ifndef FUZZ_REQUIRE_H
#define FUZZ_REQUIRE_H

#include <stdio.h>
#include <stdlib.h>

#define REQUIRE(cond, ...) do { \
    if (!(cond)) { \
      fprintf(stderr, "%s: %s: ", __FILE__, #cond); \
      fprintf(stderr, __VA_ARGS__); \
      fputc('\n', stderr); \
      abort(); \
    } \
  } while (0)

#endif
