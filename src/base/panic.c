/* SPDX-License-Identifier: MIT */
/* Fatal errors and warnings: one line each on stderr, prefixed "ito: ". */
#include "base/panic.h"
#include "base/libc.h"

#ifdef ITO_TSAN
_Atomic int ito__fence_word;   /* see ITO_FENCE */
#endif

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static void vsay(const char *fmt, va_list ap)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "ito: ");
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof buf - 2)
        len = sizeof buf - 2;
    buf[len++] = '\n';
    /* write(2), not stdio: callers may hold stdio locks or be on a small stack. */
    ssize_t w = ito__sys_write(STDERR_FILENO, buf, len);
    (void)w;
}

void ito__panic(const char *fmt, ...)
{
    /* From here on no handler of the program's runs: one that calls ito
     * again (the mistake some panics report) would panic over this one. */
    uint64_t all = ~0ull;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof all);
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    abort();
}

void ito__warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}
