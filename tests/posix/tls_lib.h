/* SPDX-License-Identifier: MIT */
/* Loading tls_lib.c's library (its path in POSIX_TLS_LIB) with dlopen, for
 * the programs that check what a thread sees of it. Include after conform.h. */
#ifndef ITO_TESTS_POSIX_TLS_LIB_H
#define ITO_TESTS_POSIX_TLS_LIB_H

#include <dlfcn.h>

struct tls_lib {
    long (*get)(int model);           /* 0: general dynamic, 1: initial exec */
    void (*set)(int model, long v);
};

static inline struct tls_lib tls_lib_load(void)
{
    const char *lib = getenv("POSIX_TLS_LIB");
    CHECK(lib != NULL);
    void *h = dlopen(lib, RTLD_NOW);
    if (!h)
        fprintf(stderr, "dlopen: %s\n", dlerror());
    CHECK(h != NULL);
    struct tls_lib l = { (long (*)(int))dlsym(h, "tls_lib_get"), (void (*)(int, long))dlsym(h, "tls_lib_set") };
    CHECK(l.get && l.set);
    return l;
}

#endif
