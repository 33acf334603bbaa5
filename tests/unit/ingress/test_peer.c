/* Tests ingress/core/peer.c: trusted-proxy lists and the client address a request is counted
 * under (the TCP peer; X-Forwarded-For only from a trusted proxy; IPv6 by its /64). */
#include "check.h"
#include "err.h"
#include "peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static struct sockaddr_storage ss;

static const struct sockaddr *addr(const char *text)
{
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
    } else {
        CHECK_INT_EQ(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
        in6->sin6_family = AF_INET6;
    }
    return (const struct sockaddr *)&ss;
}

/* The client of a request from peer with X-Forwarded-For xff, given trusted. */
static const char *client(const char *peer, const char *xff, const ing_peer_nets_t *trusted)
{
    static char out[ING_PEER_LEN];
    CHECK_INT_EQ(ing_peer_client(addr(peer), xff, trusted, out, sizeof(out)), 0);
    return out;
}

static void test_lists(void)
{
    char err[256];
    ing_peer_nets_t *n = ing_peer_nets_parse(" 10.0.0.0/8, 192.168.1.5 ,2001:db8::/32,::1,172.16.0.0/12,"
                                   "fd00::/8, 0.0.0.0/0x",
                                   err, sizeof(err));
    CHECK(n == NULL);
    CHECK_CONTAINS(err, "\"0.0.0.0/0x\" is not an address or CIDR block");
    static const char *const bad[] = {"10.0.0.0/33", "::/129",     "10.0.0.0/",   "/8",
                                      "10.0.0",      "host.local", "10.0.0.0/-1", "1.2.3.4 5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(ing_peer_nets_parse(bad[i], err, sizeof(err)) == NULL);
        CHECK_CONTAINS(err, "MCPQ_TRUSTED_PROXIES");
    }
    n = ing_peer_nets_parse(" 10.0.0.0/8, 192.168.1.5 ,2001:db8::/32,::1,172.16.0.0/12,fd00::/7", err,
                       sizeof(err));
    CHECK(n != NULL);
    static const char *const in[] = {
        "10.0.0.0", "10.255.255.255", "192.168.1.5", "2001:db8::1", "2001:db8:ffff::",
        "::1",      "172.31.0.1",     "fdff::1",     "fc00::",      "::ffff:10.1.2.3"};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        CHECK(ing_peer_nets_contains(n, addr(in[i])));
    static const char *const out[] = {
        "11.0.0.0", "9.255.255.255", "192.168.1.6", "2001:db9::1",
        "::2",      "172.32.0.1",    "fe00::1",     "::ffff:11.0.0.1"};
    for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
        CHECK(!ing_peer_nets_contains(n, addr(out[i])));
    CHECK(!ing_peer_nets_contains(NULL, addr("10.0.0.1")));
    ing_peer_nets_free(n);
    n = ing_peer_nets_parse("", err, sizeof(err)); /* empty: nobody is trusted */
    CHECK(n != NULL && !ing_peer_nets_contains(n, addr("127.0.0.1")));
    ing_peer_nets_free(n);
    n = ing_peer_nets_parse("0.0.0.0/0", err, sizeof(err));
    CHECK(n != NULL && ing_peer_nets_contains(n, addr("203.0.113.9")) &&
          !ing_peer_nets_contains(n, addr("2001:db8::1")));
    ing_peer_nets_free(n);
    TEST_PASS("trusted proxy lists: addresses and CIDR blocks, IPv4 and IPv6, strict");
}

static void test_client(void)
{
    char err[256];
    ing_peer_nets_t *proxies = ing_peer_nets_parse("10.0.0.0/8,fd00::/8", err, sizeof(err));
    CHECK(proxies != NULL);
    /* No trusted proxies: the peer, whatever X-Forwarded-For says. */
    CHECK_STR_EQ(client("203.0.113.7", "198.51.100.1", NULL), "203.0.113.7");
    CHECK_STR_EQ(client("10.1.1.1", "198.51.100.1", NULL), "10.1.1.1");
    /* A peer that is not a trusted proxy: its header is ignored. */
    CHECK_STR_EQ(client("203.0.113.7", "198.51.100.1", proxies), "203.0.113.7");
    /* A trusted proxy: the rightmost untrusted address; spoofed entries to its left lose. */
    CHECK_STR_EQ(client("10.1.1.1", "198.51.100.1", proxies), "198.51.100.1");
    CHECK_STR_EQ(client("10.1.1.1", "1.2.3.4, 198.51.100.1", proxies), "198.51.100.1");
    CHECK_STR_EQ(client("10.1.1.1", "1.2.3.4,198.51.100.1, 10.2.2.2", proxies), "198.51.100.1");
    CHECK_STR_EQ(client("10.1.1.1", "198.51.100.1:4711", proxies), "198.51.100.1");
    CHECK_STR_EQ(client("10.1.1.1", "[2001:db8::5]:443", proxies), "2001:db8::/64");
    /* No header, an empty one, or garbage: the last trusted hop. */
    CHECK_STR_EQ(client("10.1.1.1", NULL, proxies), "10.1.1.1");
    CHECK_STR_EQ(client("10.1.1.1", "", proxies), "10.1.1.1");
    CHECK_STR_EQ(client("10.1.1.1", "198.51.100.1, unknown", proxies), "10.1.1.1");
    CHECK_STR_EQ(client("10.1.1.1", "198.51.100.1, junk, 10.3.3.3", proxies), "10.3.3.3");
    /* Every hop trusted: the leftmost. */
    CHECK_STR_EQ(client("10.1.1.1", "10.9.9.9,10.8.8.8", proxies), "10.9.9.9");
    /* IPv6 by its /64; IPv4-mapped as IPv4. */
    CHECK_STR_EQ(client("2001:db8:1:2:aaaa:bbbb:cccc:dddd", NULL, NULL), "2001:db8:1:2::/64");
    CHECK_STR_EQ(client("2001:db8:1:2::1", NULL, NULL), "2001:db8:1:2::/64");
    CHECK_STR_EQ(client("::ffff:203.0.113.7", NULL, NULL), "203.0.113.7");
    CHECK_STR_EQ(client("fd00::1", "2001:db8:9:9::1", proxies), "2001:db8:9:9::/64");
    char out[ING_PEER_LEN];
    struct sockaddr other = {.sa_family = AF_UNIX};
    CHECK_INT_EQ(ing_peer_client(&other, NULL, NULL, out, sizeof(out)), MCPQ_EINVAL);
    CHECK_STR_EQ(out, "unknown");
    ing_peer_nets_free(proxies);
    TEST_PASS("the client: the TCP peer; X-Forwarded-For only behind a trusted proxy, from the "
              "right; IPv6 by its /64");
}

/* The Origin and Host allow-lists (ing_peer_listed). */
static void test_allow_lists(void)
{
    const char *origins = "http://localhost:*, https://app.example.com,http://127.0.0.1:8080";
    CHECK(ing_peer_listed(origins, "http://localhost:3000"));
    CHECK(ing_peer_listed(origins, "http://localhost"));
    CHECK(ing_peer_listed(origins, "HTTP://LOCALHOST:1"));
    CHECK(!ing_peer_listed(origins, "http://localhost.evil.com"));
    CHECK(!ing_peer_listed(origins, "http://localhost:80x"));
    CHECK(!ing_peer_listed(origins, "https://localhost:3000"));
    CHECK(ing_peer_listed(origins, "https://app.example.com"));
    CHECK(!ing_peer_listed(origins, "https://app.example.com:444"));
    CHECK(ing_peer_listed(origins, "http://127.0.0.1:8080"));
    CHECK(!ing_peer_listed(origins, "http://127.0.0.1:8081"));
    CHECK(!ing_peer_listed(origins, "http://evil.example.com"));
    CHECK(!ing_peer_listed("", "http://localhost"));
    CHECK(ing_peer_listed("localhost:*,gw.internal:443", "gw.internal:443"));
    CHECK(!ing_peer_listed("localhost:*,gw.internal:443", "gw.internal"));
    TEST_PASS("allow-lists");
}

int main(void)
{
    test_allow_lists();
    test_lists();
    test_client();
    return 0;
}
