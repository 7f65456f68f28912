/* SPDX-License-Identifier: MIT */
/* Reading ito's environment variables: strict parsing, a clear warning and
 * the default when a value is malformed or out of range. */
#ifndef ITO_BASE_ENV_H
#define ITO_BASE_ENV_H

#include <stdbool.h>
#include <stddef.h>

/* The integer value of `name` within [min, max], or `dflt` if unset/invalid.
 * Accepts decimal with an optional k/K, m/M, g/G suffix (powers of 1024) when
 * `sizes` is true. */
long long ito__env_int(const char *name, long long dflt, long long min, long long max, bool sizes);
/* The string value of `name`, or NULL if unset or empty. */
const char *ito__env_str(const char *name);
/* A signal as a setting names it: "SIGQUIT", "QUIT", "SIGRTMIN+2" or a
 * number; -1 for anything else. Which signals a setting accepts is its
 * caller's to say. */
int ito__signal_parse(const char *s);

#endif
