/* SPDX-License-Identifier: MIT */
#include "base/env.h"
#include "base/panic.h"

#include <errno.h>
#include <stdlib.h>

const char *ito__env_str(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

long long ito__env_int(const char *name, long long dflt, long long min, long long max, bool sizes)
{
    const char *v = ito__env_str(name);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v)
        goto bad;
    if (sizes && *end) {
        int shift = 0;
        switch (*end) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: goto bad;
        }
        if (x > (max >> shift))
            goto range;
        x <<= shift;
        end++;
    }
    if (*end)
        goto bad;
    if (x < min || x > max)
        goto range;
    return x;
bad:
    ito__warn("ignoring %s='%s': not %s; using %lld", name, v,
              sizes ? "a number of bytes (like 262144 or 256k)" : "an integer", dflt);
    return dflt;
range:
    ito__warn("ignoring %s='%s': must be between %lld and %lld; using %lld", name, v, min, max, dflt);
    return dflt;
}
