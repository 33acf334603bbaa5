/*
 * Tests the rules of ingress/core/webhook.c that need no network: the retry schedule and the
 * next attempt's delay, the Retry-After parser, the SSRF address classifier and the
 * config-time check of literal webhook hosts.
 */
#include "check.h"
#include "err.h"
#include "webhook.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

static void test_schedule(void)
{
    ing_whrules_schedule_t s;
    char err[256];
    CHECK_INT_EQ(ing_whrules_schedule_parse("0,5,300,1800,7200,18000,36000,36000", &s, err, sizeof(err)),
                 0);
    CHECK_INT_EQ(s.n, 8);
    CHECK_INT_EQ(s.s[0], 0);
    CHECK_INT_EQ(s.s[7], 36000);
    CHECK_INT_EQ(ing_whrules_schedule_parse(" 0 , 1,1 ", &s, err, sizeof(err)), 0);
    CHECK_INT_EQ(s.n, 3);
    CHECK_INT_EQ(s.s[1], 1);
    const char *bad[] = {"", ",", "0,", "1,,2", "-1", "a", "1.5", "0,2592001", "1 2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_INT_EQ(ing_whrules_schedule_parse(bad[i], &s, err, sizeof(err)), MCPQ_EINVAL);
        CHECK_CONTAINS(err, "MCPQ_WEBHOOK_RETRY_SCHEDULE");
    }
    char many[200] = "0";
    for (int i = 0; i < ING_WH_SCHEDULE_MAX; i++)
        strcat(many, ",1");
    CHECK_INT_EQ(ing_whrules_schedule_parse(many, &s, err, sizeof(err)), MCPQ_EINVAL);
    TEST_PASS("MCPQ_WEBHOOK_RETRY_SCHEDULE is parsed and bad lists are refused");

    CHECK_INT_EQ(ing_whrules_schedule_parse("0,5,300", &s, err, sizeof(err)), 0);
    CHECK_INT_EQ(ing_whrules_next_delay_ms(&s, 1, -1), 5000);     /* after attempt 1: entry 2 */
    CHECK_INT_EQ(ing_whrules_next_delay_ms(&s, 2, -1), 300000);   /* after attempt 2: entry 3 */
    CHECK_INT_EQ(ing_whrules_next_delay_ms(&s, 3, -1), -1);       /* used up: failed */
    CHECK_INT_EQ(ing_whrules_next_delay_ms(&s, 1, 60000), 60000); /* Retry-After is later */
    CHECK_INT_EQ(ing_whrules_next_delay_ms(&s, 1, 1000), 5000);   /* ... or not */
    CHECK_INT_EQ(ing_whrules_next_delay_ms(&s, 3, 1000), -1);     /* no attempt left either way */
    CHECK_INT_EQ(ing_whrules_next_delay_ms(&s, 1, ING_WH_RETRY_AFTER_MAX_MS * 3),
                 ING_WH_RETRY_AFTER_MAX_MS);
    CHECK_INT_EQ(ing_whrules_schedule_parse("0", &s, err, sizeof(err)), 0);
    CHECK_INT_EQ(ing_whrules_next_delay_ms(&s, 1, -1), -1); /* one attempt only */
    TEST_PASS("the next attempt follows the schedule, no earlier than Retry-After");
}

static void test_retry_after(void)
{
    int64_t now = (int64_t)time(NULL) * 1000;
    CHECK_INT_EQ(ing_whrules_retry_after_ms("3", now), 3000);
    CHECK_INT_EQ(ing_whrules_retry_after_ms(" 120 \r\n", now), 120000);
    CHECK_INT_EQ(ing_whrules_retry_after_ms("0", now), 0);
    CHECK_INT_EQ(ing_whrules_retry_after_ms("999999999", now), ING_WH_RETRY_AFTER_MAX_MS);
    CHECK_INT_EQ(ing_whrules_retry_after_ms("99999999999999999999", now), -1);
    char date[64];
    time_t later = (time_t)(now / 1000) + 90;
    struct tm tm;
    gmtime_r(&later, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm); /* IMF-fixdate */
    CHECK_INT_EQ(ing_whrules_retry_after_ms(date, now), 90000);
    strftime(date, sizeof(date), "%A, %d-%b-%y %H:%M:%S GMT", &tm); /* RFC 850 */
    CHECK_INT_EQ(ing_whrules_retry_after_ms(date, now), 90000);
    strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", &tm); /* asctime */
    CHECK_INT_EQ(ing_whrules_retry_after_ms(date, now), 90000);
    CHECK_INT_EQ(ing_whrules_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT", now), 0); /* past */
    CHECK_INT_EQ(ing_whrules_retry_after_ms("Fri, 01 Jan 2100 00:00:00 GMT", now),
                 ING_WH_RETRY_AFTER_MAX_MS);
    const char *bad[] = {NULL, "", "  ", "soon", "-5", "1.5", "3s", "Wed, 99 Foo 2015 junk"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_INT_EQ(ing_whrules_retry_after_ms(bad[i], now), -1);
    TEST_PASS("Retry-After: delay-seconds and HTTP-dates, clamped to [0, 24 h]");
}

static const char *v4(const char *ip)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    CHECK_INT_EQ(inet_pton(AF_INET, ip, &sa.sin_addr), 1);
    return ing_whrules_addr_refused((const struct sockaddr *)&sa);
}

static const char *v6(const char *ip)
{
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
    CHECK_INT_EQ(inet_pton(AF_INET6, ip, &sa.sin6_addr), 1);
    return ing_whrules_addr_refused((const struct sockaddr *)&sa);
}

/* Each range {first, last, just below, just above}: the first two refused, the others not. */
static void check_ranges(const char *(*judge)(const char *), const char *const (*ranges)[4],
                         size_t n)
{
    for (size_t i = 0; i < n; i++) {
        CHECK(judge(ranges[i][0]) != NULL);
        CHECK(judge(ranges[i][1]) != NULL);
        CHECK(judge(ranges[i][2]) == NULL);
        CHECK(judge(ranges[i][3]) == NULL);
    }
}

static void test_addresses(void)
{
    static const char *const refused4[][2] = {
        {"127.0.0.1", "loopback"},        {"127.255.0.9", "loopback"},
        {"10.1.2.3", "private"},          {"172.16.0.1", "private"},
        {"172.31.255.255", "private"},    {"192.168.1.1", "private"},
        {"169.254.169.254", "link"},      {"100.64.0.1", "CGNAT"},
        {"100.127.255.254", "CGNAT"},     {"0.0.0.0", "unspecified"},
        {"224.0.0.1", "multicast"},       {"239.255.255.250", "multicast"},
        {"255.255.255.255", "broadcast"}, {"240.0.0.1", "reserved"},
    };
    for (size_t i = 0; i < sizeof(refused4) / sizeof(refused4[0]); i++)
        CHECK_CONTAINS(v4(refused4[i][0]), refused4[i][1]);
    static const char *const public4[] = {"8.8.8.8",     "1.1.1.1",     "172.15.255.255",
                                          "172.32.0.1",  "100.63.0.1",  "100.128.0.1",
                                          "169.253.1.1", "192.169.0.1", "223.255.255.255"};
    for (size_t i = 0; i < sizeof(public4) / sizeof(public4[0]); i++)
        CHECK(v4(public4[i]) == NULL);
    static const char *const refused6[][2] = {
        {"::1", "loopback"},
        {"::", "unspecified"},
        {"fc00::1", "unique local"},
        {"fd12:3456::1", "unique local"},
        {"fe80::1", "link-local"},
        {"febf::1", "link-local"},
        {"fec0::1", "site-local"},
        {"ff02::1", "multicast"},
        {"::ffff:127.0.0.1", "loopback"},
        {"::ffff:10.0.0.1", "private"},
        {"::ffff:169.254.169.254", "link-local"},
        {"::127.0.0.1", "loopback"},
        {"64:ff9b::a9fe:a9fe", "link-local"},
        {"2002:c0a8:0101::1", "private"},
    };
    for (size_t i = 0; i < sizeof(refused6) / sizeof(refused6[0]); i++)
        CHECK_CONTAINS(v6(refused6[i][0]), refused6[i][1]);
    static const char *const public6[] = {"2001:4860:4860::8888", "2606:4700::1111",
                                          "::ffff:8.8.8.8", "64:ff9b::808:808",
                                          "2002:0808:0808::1"};
    for (size_t i = 0; i < sizeof(public6) / sizeof(public6[0]); i++)
        CHECK(v6(public6[i]) == NULL);
    /* The special-purpose ranges: first and last address refused, a neighbour just outside
     * passes. */
    static const char *const ranges4[][4] = {
        {"192.0.0.0", "192.0.0.255", "191.255.255.255", "192.0.1.0"},
        {"198.18.0.0", "198.19.255.255", "198.17.255.255", "198.20.0.0"},
        {"192.0.2.0", "192.0.2.255", "192.0.1.255", "192.0.3.0"},
        {"198.51.100.0", "198.51.100.255", "198.51.99.255", "198.51.101.0"},
        {"203.0.113.0", "203.0.113.255", "203.0.112.255", "203.0.114.0"},
    };
    check_ranges(v4, ranges4, sizeof(ranges4) / sizeof(ranges4[0]));
    CHECK_CONTAINS(v4("192.0.0.8"), "192.0.0.0/24");
    CHECK_CONTAINS(v4("198.18.0.1"), "benchmarking");
    CHECK_CONTAINS(v4("203.0.113.7"), "TEST-NET");
    CHECK_CONTAINS(v6("::ffff:198.51.100.1"), "TEST-NET"); /* and in IPv6 forms */
    static const char *const ranges6[][4] = {
        {"2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff",
         "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:1::"},
        {"64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "64:ff9b:0:ffff:ffff:ffff:ffff:ffff",
         "64:ff9b:2::"},
        {"100::", "100::ffff:ffff:ffff:ffff", "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
         "100:0:0:1::"},
    };
    check_ranges(v6, ranges6, sizeof(ranges6) / sizeof(ranges6[0]));
    CHECK_CONTAINS(v6("2001:0:4136:e378:8000:63bf:3fff:fdd2"), "Teredo");
    CHECK_CONTAINS(v6("64:ff9b:1::a00:1"), "NAT64");
    CHECK_CONTAINS(v6("100::1"), "discard");
    char host[64];
    CHECK_CONTAINS(ing_whrules_url_refused("https://[2001:0:53aa:64c::1]/hook", host, sizeof(host)),
                   "Teredo");
    CHECK_CONTAINS(ing_whrules_url_refused("http://198.18.0.1:8080/hook", host, sizeof(host)),
                   "benchmarking");
    struct sockaddr other = {.sa_family = AF_UNIX};
    CHECK(ing_whrules_addr_refused(&other) != NULL);
    CHECK(ing_whrules_addr_refused(NULL) != NULL);
    TEST_PASS("the SSRF guard refuses loopback, private, link-local, CGNAT, multicast, "
              "unspecified, the special-purpose ranges (192.0.0/24, 198.18/15, TEST-NETs, "
              "2001::/32, 64:ff9b:1::/48, 100::/64) and IPv4-embedding forms of them; public "
              "addresses pass");
}

static void test_urls(void)
{
    char host[256];
    static const char *const refused[][2] = {
        {"http://127.0.0.1:9/h", "127.0.0.1"},
        {"https://10.0.0.5/x?y=1", "10.0.0.5"},
        {"http://user:pw@192.168.0.1/", "192.168.0.1"},
        {"http://a@b@169.254.169.254/latest", "169.254.169.254"},
        {"http://[::1]:8080/h", "::1"},
        {"http://[::ffff:127.0.0.1]/h", "::ffff:127.0.0.1"},
        {"http://[fe80::1%25eth0]/h", "fe80::1%25eth0"},
        {"http://2130706433/h", "2130706433"}, /* 127.0.0.1 as one number */
        {"http://0x7f.1/h", "0x7f.1"},
        {"http://127.1#frag", "127.1"},
        {"http://0.0.0.0:80", "0.0.0.0"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *why = ing_whrules_url_refused(refused[i][0], host, sizeof(host));
        if (!why) {
            fprintf(stderr, "not refused: %s\n", refused[i][0]);
            CHECK(why != NULL);
        }
        CHECK_STR_EQ(host, refused[i][1]);
    }
    static const char *const allowed[] = {"http://example.com/h",
                                          "https://8.8.8.8/h",
                                          "http://[2001:db8::1]/h",
                                          "http://localhost.example/",
                                          "https://hooks.example.com:8443/a@b",
                                          "not a url"};
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        CHECK(ing_whrules_url_refused(allowed[i], host, sizeof(host)) == NULL);
    TEST_PASS("webhook urls naming a private address literally are recognised");

    char err[512];
    cJSON *cfg =
        cJSON_Parse("{\"tenants\":[{\"id\":\"a\",\"webhooks\":[{\"id\":\"w\",\"url\":\"https://"
                    "example.com/\"}]},"
                    "{\"id\":\"b\",\"webhooks\":[{\"id\":\"ok\",\"url\":\"http://8.8.8.8/\"},"
                    "{\"id\":\"bad\",\"url\":\"http://127.0.0.1:9999/hook?token=s3cr3t\"}]}]}");
    CHECK(cfg != NULL);
    CHECK_INT_EQ(ing_whrules_config_check(cfg, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "$.tenants[1].webhooks[1].url");
    CHECK_CONTAINS(err, "127.0.0.1");
    CHECK_CONTAINS(err, "loopback");
    CHECK_CONTAINS(err, "MCPQ_WEBHOOK_ALLOW_PRIVATE");
    CHECK(strstr(err, "s3cr3t") == NULL); /* the url itself (it may hold a token) is not echoed */
    cJSON_Delete(cfg);
    cfg = cJSON_Parse("{\"tenants\":[{\"id\":\"a\",\"webhooks\":[{\"id\":\"w\",\"url\":"
                      "\"https://example.com/\"}]},{\"id\":\"b\"}]}");
    CHECK_INT_EQ(ing_whrules_config_check(cfg, err, sizeof(err)), 0);
    cJSON_Delete(cfg);
    TEST_PASS("the config check names the JSON path of a refused webhook url");
}

int main(void)
{
    test_schedule();
    test_retry_after();
    test_addresses();
    test_urls();
    return 0;
}
