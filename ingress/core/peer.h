/*
 * peer.h - which client a request comes from, for the limits on failed authentications
 * (docs/authentication.md "Authentication").
 *
 * The client is the TCP peer. Only when the peer is one of MCPQ_TRUSTED_PROXIES (a comma list
 * of addresses and CIDR blocks, IPv4 or IPv6; empty by default) is X-Forwarded-For believed:
 * the client is then the rightmost address in it that is not itself a trusted proxy (every
 * X-Forwarded-For header of the request, in order, as one list). An entry that is not an
 * address ends the walk, and the client is the last trusted hop seen; so do values longer
 * than 4 KiB in all. A header from anyone else is ignored, so a client cannot choose the
 * address it is counted under.
 *
 * A client is named as text: an IPv4 address ("203.0.113.7"; an IPv4-mapped IPv6 peer
 * counts as its IPv4 address) or, for IPv6, its /64 ("2001:db8:1:2::/64"), because one
 * host usually holds a whole /64.
 *
 * Thread-safe: a parsed list is read-only.
 */
#ifndef MCPQ_ING_PEER_H
#define MCPQ_ING_PEER_H

#include <stddef.h>
#include <sys/socket.h>

/* Room for a client's name: an IPv6 /64 with its suffix. */
#define ING_PEER_LEN 64
#define ING_PEER_XFF_MAX 4096 /* the X-Forwarded-For bytes looked at */

typedef struct ing_peer_nets ing_peer_nets_t;

/* Parses a comma list of addresses and CIDR blocks ("10.0.0.0/8, 2001:db8::/32, 127.0.0.1";
 * blanks around entries allowed; NULL or "" is the empty list). The list, or NULL with
 * errstr naming the bad entry. */
ing_peer_nets_t *ing_peer_nets_parse(const char *list, char *errstr, size_t errstr_size);
void ing_peer_nets_free(ing_peer_nets_t *nets);

/* 1 when sa (AF_INET or AF_INET6) is in one of the blocks of nets (NULL: none). */
int ing_peer_nets_contains(const ing_peer_nets_t *nets, const struct sockaddr *sa);

/*
 * The client's name into out (at least ING_PEER_LEN bytes) from the TCP peer and xff (the
 * request's X-Forwarded-For values joined by commas, or NULL) as described above. 0, or
 * MCPQ_EINVAL when the peer is not an IP address (out is then "unknown").
 */
int ing_peer_client(const struct sockaddr *peer, const char *xff, const ing_peer_nets_t *trusted,
                    char *out, size_t size);

/* 1 when value matches an entry of the comma list (scheme://host[:port|:*] for origins,
 * host[:port|:*] for hosts). */
int ing_peer_listed(const char *list, const char *value);

/*
 * The scheme://host[:port] the ingress's own absolute URLs start with (file URLs, the
 * Protected Resource Metadata of docs/authorization.md), into out: public_url
 * (MCPQ_PUBLIC_URL) without trailing slashes when set; else http:// and host (the request's
 * Host) when host is loopback or listed in allowed_hosts (MCPQ_ALLOWED_HOSTS) — the
 * operator's word, never the caller's. 0, MCPQ_EUNAVAIL (no trusted base) or MCPQ_ETOOBIG.
 */
int ing_peer_public_base(const char *public_url, const char *allowed_hosts, const char *host,
                         char *out, size_t size);

#endif
