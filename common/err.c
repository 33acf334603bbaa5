#include "err.h"

const char *mcpq_strerror(int err)
{
    switch (err) {
    case MCPQ_OK:
        return "success";
    case MCPQ_ENOMEM:
        return "out of memory";
    case MCPQ_EINVAL:
        return "invalid input";
    case MCPQ_EIO:
        return "i/o error";
    case MCPQ_ETIMEDOUT:
        return "timed out";
    case MCPQ_ENOTFOUND:
        return "not found";
    case MCPQ_EUNAVAIL:
        return "service unavailable";
    case MCPQ_ETOOBIG:
        return "too big";
    case MCPQ_EEXIST:
        return "already exists";
    case MCPQ_EPROTO:
        return "protocol error";
    case MCPQ_EQUOTA:
        return "tenant quota reached";
    default:
        return "unknown error";
    }
}
