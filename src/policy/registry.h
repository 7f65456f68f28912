/* SPDX-License-Identifier: MIT */
/* The policy registry (registry.c): the built-in policies and the
 * application's, by name. */
#ifndef ITO_POLICY_REGISTRY_H
#define ITO_POLICY_REGISTRY_H

#include <ito/policy.h>

/* The policy registered as `name`, or NULL. */
const ito_policy_ops_t *ito__policy_find(const char *name);
/* The names of the registered policies, built-in ones first, in the order
 * they were registered, separated by ", " ("ws, fifo, ..."): into buf (n
 * bytes, always NUL-terminated; cut short if too small). For messages. */
void ito__policy_names(char *buf, size_t n);
/* Register the built-in policies (once; idempotent). */
void ito__policies_builtin(void);
/* The child of fork: the registry's lock is free (api/init.c). */
void ito__policies_forked(void);

#endif
