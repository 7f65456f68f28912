/* SPDX-License-Identifier: MIT */
#include "base/env.h"
#include "base/panic.h"

#include <errno.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value longer than this is shown cut, with "...": no integer needs more,
 * and the warning (one line, at most 1 KiB: base/panic.c) keeps its end,
 * which says what is used instead. */
#define SHOWN_MAX 64

const char *ito__env_str(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A byte count the way a user may write it: "262144 (256k)", or "1000"
 * where no suffix divides it. */
static void bytes_str(char *buf, size_t n, long long x)
{
    static const char suffix[] = "kmg";
    int s = -1;
    while (s < 2 && x > 0 && (x & ((1LL << (10 * (s + 2))) - 1)) == 0)
        s++;
    if (s < 0)
        snprintf(buf, n, "%lld", x);
    else
        snprintf(buf, n, "%lld (%lld%c)", x, x >> (10 * (s + 1)), suffix[s]);
}

/* Whether `name` was reported already. A variable may be read more than
 * once (ITO_STACK_SIZE by an attribute call before ito starts and again as
 * it starts; ITO_MAX_ACTIVATIONS again in the child of a fork): its warning
 * is printed once. Slots are claimed by CAS (readers may race) and hold the
 * callers' string literals; ito reads fewer variables than there are slots. */
static bool reported(const char *name)
{
    static const char *_Atomic seen[32];
    for (size_t i = 0; i < sizeof seen / sizeof seen[0]; i++) {
        const char *s = atomic_load_explicit(&seen[i], memory_order_acquire);
        if (!s && atomic_compare_exchange_strong(&seen[i], &s, name))
            return false;
        if (!strcmp(s, name))
            return true;
    }
    return false;   /* the table is full: warn again rather than never */
}

/* One line: the variable, its value, what is wrong with it, what it accepts
 * and the value used instead (the caller's default: for ITO_VPROCS, the
 * number of usable CPUs it computed, not a placeholder). */
static long long reject(const char *name, const char *v, bool syntax, long long dflt, long long min, long long max,
                        bool sizes)
{
    char accepted[256], used[48];
    if (reported(name))
        return dflt;
    if (sizes) {
        char lo[48], hi[48];
        bytes_str(lo, sizeof lo, min);
        bytes_str(hi, sizeof hi, max);
        snprintf(accepted, sizeof accepted,
                 "a number of bytes from %s to %s, with an optional k, m or g suffix (like 262144 or 256k)", lo, hi);
        bytes_str(used, sizeof used, dflt);
    } else {
        if (min == 0 && max == 1)
            snprintf(accepted, sizeof accepted, "0 or 1");
        else
            snprintf(accepted, sizeof accepted, "a whole number from %lld to %lld", min, max);
        snprintf(used, sizeof used, "%lld", dflt);
    }
    ito__warn("ignoring %s='%.*s%s': %s; accepted: %s; using the default, %s", name, SHOWN_MAX, v,
              strlen(v) > SHOWN_MAX ? "..." : "",
              !syntax ? "out of range" : sizes ? "not a number of bytes" : "not a whole number", accepted, used);
    return dflt;
}

long long ito__env_int(const char *name, long long dflt, long long min, long long max, bool sizes)
{
    const char *v = ito__env_str(name);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || (errno && errno != ERANGE))
        return reject(name, v, true, dflt, min, max, sizes);
    bool overflow = errno == ERANGE;   /* a number, but beyond long long */
    if (sizes && *end) {
        int shift = 0;
        switch (*end) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return reject(name, v, true, dflt, min, max, sizes);
        }
        end++;
        if (*end)
            return reject(name, v, true, dflt, min, max, sizes);
        /* A size is not negative; the test also keeps the shift defined. */
        if (overflow || x < 0 || x > (max >> shift))
            return reject(name, v, false, dflt, min, max, sizes);
        x <<= shift;
    }
    if (*end)
        return reject(name, v, true, dflt, min, max, sizes);
    if (overflow || x < min || x > max)
        return reject(name, v, false, dflt, min, max, sizes);
    return x;
}

int ito__signal_parse(const char *s)
{
    if (!strncmp(s, "SIG", 3))
        s += 3;
    char *end;
    if (!strncmp(s, "RTMIN", 5)) {
        long n = s[5] == '+' ? strtol(s + 6, &end, 10) : (end = (char *)s + 5, 0);
        return *end || n < 0 || SIGRTMIN + n > SIGRTMAX ? -1 : SIGRTMIN + (int)n;
    }
    for (int sig = 1; sig < SIGRTMIN; sig++)
        if (sigabbrev_np(sig) && !strcmp(s, sigabbrev_np(sig)))
            return sig;
    long n = strtol(s, &end, 10);
    return *s && !*end && n >= 1 && n <= SIGRTMAX ? (int)n : -1;
}
