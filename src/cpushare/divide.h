/* SPDX-License-Identifier: MIT */
/* Dynamic space sharing: how the processors are divided among the ito
 * processes of a machine ([SA §4.1]). A pure function; see divide.c. */
#ifndef ITO_CPUSHARE_DIVIDE_H
#define ITO_CPUSHARE_DIVIDE_H

#include "cpushare/cpumask.h"

/* The most processes one division takes (the allocation table's slots). */
#define ITO__DIVIDE_MAX_CLAIMS 64

/* One process as the division sees it. */
struct ito__divide_claim {
    int priority;          /* higher goes first */
    int want;              /* processors it could use now (0: idle); one, shared, is given regardless */
    int quota;             /* at most this many (its CPU quota); <= 0: no quota */
    int max;               /* the most it can use at all (its vprocs); <= 0: want */
    ito__cpumask allowed;  /* its affinity mask */
    ito__cpumask held;     /* what it holds now: kept where the division allows */
};

/* Divide `online` among claims[0..n) (n <= ITO__DIVIDE_MAX_CLAIMS): grant[i]
 * gets the CPUs of claims[i]. Deterministic: the same input gives the same
 * output. */
void ito__divide(const struct ito__divide_claim *claims, int n, const ito__cpumask *online,
                       ito__cpumask *grant);

#endif
