/* Shared helpers for ito's tests: checks that abort with the location and
 * values, scaled iteration counts, and small utilities. */
#ifndef ITO_TESTS_COMMON_H
#define ITO_TESTS_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ito.h>

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* Compare integers, printing both values on failure. */
#define CHECK_EQ(a, b)                                                                  \
    do {                                                                                \
        long long va_ = (long long)(a), vb_ = (long long)(b);                           \
        if (va_ != vb_) {                                                               \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n",        \
                    __FILE__, __LINE__, #a, #b, va_, vb_);                              \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* An ito call that must succeed (returns 0). */
#define OK(call) CHECK_EQ((call), 0)

/* n scaled by ITO_TEST_SCALE (0.1 in sanitizer builds), at least 1. */
static inline long test_scaled(long n)
{
    const char *s = getenv("ITO_TEST_SCALE");
    double f = s ? atof(s) : 1.0;
    long v = (long)(n * (f > 0 ? f : 1.0));
    return v > 0 ? v : 1;
}

/* A small deterministic PRNG for random interleavings (xorshift64*). */
static inline uint64_t test_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

static inline struct timespec test_deadline_in(uint64_t ns)
{
    uint64_t t = ito_now_ns() + ns;
    struct timespec ts = { (time_t)(t / 1000000000u), (long)(t % 1000000000u) };
    return ts;
}

#endif
