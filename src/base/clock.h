/* SPDX-License-Identifier: MIT */
/* Monotonic time in nanoseconds (vDSO clock_gettime: no system call). */
#ifndef ITO_BASE_CLOCK_H
#define ITO_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "base/libc.h"

static inline uint64_t ito__now_ns(void)
{
    struct timespec ts;
    ito__libc_clock_gettime(CLOCK_MONOTONIC, &ts);   /* (libito-pthread defines clock_gettime) */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An absolute CLOCK_MONOTONIC timespec as nanoseconds; 0 never happens for a
 * valid time after boot, so callers use 0 for "no deadline". Returns false for
 * an invalid timespec (negative, or tv_nsec out of range). */
static inline int ito__timespec_to_ns(const struct timespec *ts, uint64_t *ns)
{
    if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L)
        return 0;
    /* Saturate: a deadline past 2554 AD means "never" (UINT64_MAX). */
    if ((uint64_t)ts->tv_sec >= (UINT64_MAX - (uint64_t)ts->tv_nsec) / 1000000000u) {
        *ns = UINT64_MAX;
        return 1;
    }
    uint64_t v = (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
    *ns = v ? v : 1;
    return 1;
}

#endif
