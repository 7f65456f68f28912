/* SPDX-License-Identifier: MIT */
/* Which CPUs share a cache, from hwloc (topology.c). */
#ifndef ITO_BASE_TOPOLOGY_H
#define ITO_BASE_TOPOLOGY_H

/* The level of the smallest data or unified cache that CPUs a and b (OS
 * numbers) share: 1, 2, 3..., or 0 when they share none or the topology
 * cannot be read. The same CPU shares its L1 with itself. Thread-safe; the
 * first call reads the topology (a few milliseconds). */
int ito__topo_shared_cache(int a, int b);

#endif
