/*
 * err.h - the error codes every mcpq function returns.
 *
 * Functions return int: 0 on success, a negative MCPQ_E* code on failure.
 */
#ifndef MCPQ_ERR_H
#define MCPQ_ERR_H

enum mcpq_err {
    MCPQ_OK = 0,
    MCPQ_ENOMEM = -1,    /* allocation failed */
    MCPQ_EINVAL = -2,    /* bad argument or malformed input */
    MCPQ_EIO = -3,       /* a system call or connection failed */
    MCPQ_ETIMEDOUT = -4, /* a deadline passed */
    MCPQ_ENOTFOUND = -5, /* no such object */
    MCPQ_EUNAVAIL = -6,  /* a dependency (Kafka, Redis) is unreachable */
    MCPQ_ETOOBIG = -7,   /* a bounded buffer would exceed its maximum */
    MCPQ_EEXIST = -8,    /* the object exists already */
    MCPQ_EPROTO = -9,    /* a peer answered something we cannot use */
    MCPQ_EQUOTA = -10,   /* a tenant's quota (config "quotas") is used up */
    MCPQ_EAUTH = -11,    /* a credential was refused (e.g. an invalid OAuth token: 401) */
    MCPQ_EBUSY = -12,    /* the object is in use (a job asking while its question is open) */
};

#endif
