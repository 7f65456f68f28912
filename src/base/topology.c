/* SPDX-License-Identifier: MIT */
/*
 * Cache topology through hwloc.
 *
 * The "affinity" policy moves threads preferably between vprocs whose CPUs
 * share a cache ([SKY]: migration is cheap where the data stays in a
 * cache both can read). hwloc knows the machine's caches from sysfs and
 * cpuid; we ask it once, on first use, and keep a table of the smallest
 * shared cache level for every pair of CPUs, so that a question costs one
 * load. CPUs are OS numbers (sched_getcpu, the vproc pinning); pairs beyond
 * the table, or a machine hwloc cannot read, answer 0 (no shared cache) and
 * the policy simply treats every vproc as far.
 */
#include "base/libc.h"
#include "base/topology.h"

#include <hwloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint8_t *table;   /* [ncpus * ncpus]: level, 0 none */
static int ncpus;

/* The smallest data or unified cache above both a and b. */
static int shared_level(hwloc_topology_t topo, hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t o = hwloc_get_common_ancestor_obj(topo, a, b); o; o = o->parent)
        if (hwloc_obj_type_is_dcache(o->type))
            return (int)o->attr->cache.depth;
    return 0;
}

static void load(void)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return;
    }
    int max = hwloc_bitmap_last(hwloc_topology_get_complete_cpuset(topo));
    if (max >= 0 && max < 4096) {
        int n = max + 1;
        uint8_t *t = calloc((size_t)n * (size_t)n, 1);
        if (t) {
            for (int a = 0; a < n; a++) {
                hwloc_obj_t pa = hwloc_get_pu_obj_by_os_index(topo, (unsigned)a);
                for (int b = 0; pa && b < n; b++) {
                    hwloc_obj_t pb = hwloc_get_pu_obj_by_os_index(topo, (unsigned)b);
                    if (pb)
                        t[(size_t)a * (size_t)n + (size_t)b] = (uint8_t)shared_level(topo, pa, pb);
                }
            }
            table = t;
            ncpus = n;
        }
    }
    hwloc_topology_destroy(topo);
}

int ito__topo_shared_cache(int a, int b)
{
    ito__libc_pthread_once(&once, load);
    if (a < 0 || b < 0 || a >= ncpus || b >= ncpus)
        return 0;
    return table[(size_t)a * (size_t)ncpus + (size_t)b];
}
