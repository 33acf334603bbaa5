/* Tests the Origin and Host allow-list matching (ingress/core/peer.c, ing_peer_listed). */
#include "auth.h"
#include "peer.h"
#include "check.h"

int main(void)
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
    return 0;
}
