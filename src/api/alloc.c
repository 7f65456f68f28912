/* SPDX-License-Identifier: MIT */
/* The allocator's public calls: argument checks and the init gate, then the
 * agent (cpushare/agent.c). */
#include <errno.h>

#include <ito.h>

#include "api/init.h"
#include "cpushare/agent.h"
#include "cpushare/table.h"

ITO_API int ito_alloc_info(ito_alloc_info_t *info)
{
    if (!info)
        return EINVAL;
    int e = ito__ensure_init();
    if (e)
        return e;
    ito__agent_info(info);
    return 0;
}

ITO_API int ito_alloc_set_priority(int priority)
{
    if (priority < ITO_ALLOC_PRIORITY_MIN || priority > ITO_ALLOC_PRIORITY_MAX)
        return EINVAL;
    int e = ito__ensure_init();
    if (e)
        return e;
    ito__agent_set_priority(priority);
    return 0;
}
