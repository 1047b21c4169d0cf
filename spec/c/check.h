/* check.h -- the C test harness: CHECK counts, check_done() reports
 * "N ok, N failed" (spec/run.sh sums it) and gives the exit status. */
#ifndef OTSKIT_CHECK_H
#define OTSKIT_CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (cond) check_passed++;                                             \
    else {                                                                \
      check_failed++;                                                     \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
    }                                                                     \
  } while (0)

static int check_done(void) {
  printf("%d ok, %d failed\n", check_passed, check_failed);
  return check_failed ? 1 : 0;
}

#endif
