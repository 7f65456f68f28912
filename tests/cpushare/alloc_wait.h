/* SPDX-License-Identifier: MIT */
/* What the allocation tests share: this process's allocation, and waiting
 * for a condition on it with a generous cap (no time is asserted). */
#ifndef ITO_TESTS_ALLOC_WAIT_H
#define ITO_TESTS_ALLOC_WAIT_H

#include <stdio.h>
#include <stdlib.h>

#include <ito.h>

#include "common.h"

static ito_alloc_info_t info(void)
{
    ito_alloc_info_t i;
    OK(ito_alloc_info(&i));
    return i;
}

/* Wait up to 20 s for cond; returns the milliseconds it took. */
#define AWAIT(cond)                                                                     \
    ({                                                                                       \
        uint64_t t0_ = ito_now_ns();                                                         \
        while (!(cond)) {                                                                    \
            if (ito_now_ns() - t0_ > 20000000000ull) {                                       \
                ito_alloc_info_t i_ = info();                                                \
                fprintf(stderr, "%s:%d: gave up waiting for %s (held %d of %d, want %d, %d " \
                        "processes)\n", __FILE__, __LINE__, #cond, i_.held, i_.vprocs,       \
                        i_.want, i_.processes);                                              \
                abort();                                                                     \
            }                                                                                \
            ito_sleep_ns(2000000);                                                           \
        }                                                                                    \
        (double)(ito_now_ns() - t0_) / 1e6;                                                  \
    })

#endif
