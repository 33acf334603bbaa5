/* Tests common/version.c and --version in common/settings.c: the first line names the binary
 * and the build's version, then one line per library with the version it runs with. */
#include "check.h"
#include "settings.h"
#include "version.h"

#include <cjson/cJSON.h>
#include <librdkafka/rdkafka.h>
#include <stdlib.h>

static char text[4096];

static void print(const char *const *extra)
{
    FILE *f = fmemopen(text, sizeof(text), "w");
    CHECK(f != NULL);
    version_print(f, "mcpq-test", extra);
    fclose(f);
}

int main(void)
{
    const char *v = version_get();
    CHECK(v && *v);
    CHECK_INT_EQ(strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+_-"),
                 strlen(v));
    TEST_PASS("the version is a non-empty string of safe characters");

    print(NULL);
    char first[256];
    snprintf(first, sizeof(first), "mcpq-test %s\n", v);
    CHECK_INT_EQ(strncmp(text, first, strlen(first)), 0);
    char line[256];
    snprintf(line, sizeof(line), "\n  librdkafka %s\n", rd_kafka_version_str());
    CHECK_CONTAINS(text, line);
    snprintf(line, sizeof(line), "\n  cJSON %s\n", cJSON_Version());
    CHECK_CONTAINS(text, line);
    CHECK_CONTAINS(text, "\n  hiredis 0.");
    CHECK_CONTAINS(text, "\n  OpenSSL ");
    CHECK_CONTAINS(text, "\n  libcurl ");
    CHECK(strstr(text, "libmicrohttpd") == NULL);
    TEST_PASS("first line: binary and version; then the libraries");

    const char *const extra[] = {"libmicrohttpd", "9.9.9", NULL};
    print(extra);
    CHECK_CONTAINS(text, "\n  libmicrohttpd 9.9.9\n");
    TEST_PASS("extra libraries are listed");

    /* --version wins over a bad setting and a missing MCPQ_KAFKA_BROKERS: nothing is read. */
    setenv("MCPQ_THREADS", "not-a-number", 1);
    unsetenv("MCPQ_KAFKA_BROKERS");
    char a0[] = "mcpq-test", a1[] = "--listen", a2[] = ":1", a3[] = "--version";
    char *argv[] = {a0, a1, a2, a3, NULL};
    mcpq_settings_t s;
    char err[256] = "";
    CHECK_INT_EQ(settings_load(&s, SET_INGRESS, "mcpq-test", "", 4, argv, err, sizeof(err)),
                 SETTINGS_VERSION);
    char *plain[] = {a0, NULL};
    CHECK(settings_load(&s, SET_INGRESS, "mcpq-test", "", 1, plain, err, sizeof(err)) < 0);
    TEST_PASS("settings_load answers --version before reading any setting");
    return 0;
}
