/* Tests common/kconf.c: the properties file format, the environment rule, values from
 * files, precedence, the errors a user reads (naming property and origin), the scope of
 * producer-only and consumer-only properties, and redaction. */
#include "check.h"
#include "kconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/mcpq-kconf-XXXXXX";

static const char *write_tmp(const char *name, const char *text)
{
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
    return p;
}

static void test_file_and_env(void)
{
    const char *props = write_tmp("client.properties", "# Confluent-style file\n"
                                                       "! a Java comment too\n"
                                                       "\n"
                                                       "  security.protocol = SASL_SSL  \n"
                                                       "sasl.mechanisms:PLAIN\n"
                                                       "sasl.username alice\n"
                                                       "sasl.password=from-file\n"
                                                       "linger.ms=5\r\n"
                                                       "linger.ms=6\n"
                                                       "session.timeout.ms=6000\n");
    const char *pw = write_tmp("pw", "s3cr=t\n");
    char pwvar[300];
    snprintf(pwvar, sizeof(pwvar), "MCPQ_KAFKA_PROP_SASL_PASSWORD_FILE=%s", pw);
    const char *env[] = {"PATH=/bin", pwvar, "MCPQ_KAFKA_PROP_LINGER_MS=9",
                         "MCPQ_KAFKA_PROP_SASL_PASSWORD=from-env", NULL};
    char err[512] = "";
    kconf_t *k = kconf_load(props, env, err, sizeof(err));
    if (!k)
        fprintf(stderr, "%s\n", err);
    CHECK(k != NULL);
    CHECK_STR_EQ(kconf_value(k, "security.protocol"), "SASL_SSL");
    CHECK_STR_EQ(kconf_value(k, "sasl.mechanisms"), "PLAIN");
    CHECK_STR_EQ(kconf_value(k, "sasl.username"), "alice");
    /* env after file; X_FILE after X */
    CHECK_STR_EQ(kconf_value(k, "linger.ms"), "9");
    CHECK_STR_EQ(kconf_value(k, "sasl.password"), "s3cr=t");
    const kconf_prop_t *first = kconf_get(k, 0);
    CHECK_STR_EQ(first->name, "security.protocol");
    CHECK_CONTAINS(first->origin, "client.properties:4");

    /* build: defaults < user < fixed; consumer-only skipped in a producer */
    const kconf_prop_t base[] = {{"linger.ms", "1", "default"}, {"client.id", "x", "default"}};
    const kconf_prop_t fixed[] = {{"enable.idempotence", "true", "fixed"}};
    rd_kafka_conf_t *conf = kconf_build(k, KCONF_PRODUCER, base, 2, fixed, 1, err, sizeof(err));
    CHECK(conf != NULL);
    char v[64];
    size_t vs = sizeof(v);
    CHECK(rd_kafka_conf_get(conf, "linger.ms", v, &vs) == RD_KAFKA_CONF_OK);
    CHECK_STR_EQ(v, "9");
    vs = sizeof(v);
    CHECK(rd_kafka_conf_get(conf, "client.id", v, &vs) == RD_KAFKA_CONF_OK);
    CHECK_STR_EQ(v, "x");
    rd_kafka_conf_destroy(conf);

    char *out = NULL;
    size_t olen = 0;
    FILE *f = open_memstream(&out, &olen);
    kconf_print(f, k, KCONF_PRODUCER, base, 2, fixed, 1);
    fclose(f);
    CHECK(strstr(out, "s3cr") == NULL);
    CHECK(strstr(out, "from-file") == NULL && strstr(out, "from-env") == NULL);
    CHECK_CONTAINS(out, "sasl.password=[redacted]  # MCPQ_KAFKA_PROP_SASL_PASSWORD_FILE");
    CHECK_CONTAINS(out, "linger.ms=9  # MCPQ_KAFKA_PROP_LINGER_MS");
    CHECK(strstr(out, "linger.ms=1") == NULL); /* shadowed default not shown */
    CHECK_CONTAINS(out, "# skipped (consumer only): session.timeout.ms");
    CHECK_CONTAINS(out, "enable.idempotence=true  # fixed");
    free(out);
    kconf_free(k);
}

static void expect_error(const char *file_text, const char *const env[], const char *want1,
                         const char *want2)
{
    const char *p = file_text ? write_tmp("e.properties", file_text) : NULL;
    char err[512] = "";
    kconf_t *k = kconf_load(p, env, err, sizeof(err));
    CHECK(k == NULL);
    CHECK_CONTAINS(err, want1);
    if (want2)
        CHECK_CONTAINS(err, want2);
}

static void test_errors(void)
{
    const char *none[] = {NULL};
    expect_error("linger.ms=1\nno.such.property=1\n", none, "e.properties:2",
                 "No such configuration property: \"no.such.property\"");
    expect_error("linger.ms=banana\n", none, "e.properties:1", "linger.ms");
    expect_error("security.protocol=TLS\n", none, "e.properties:1", "security.protocol");
    expect_error("sasl.password=a\\\n", none, "e.properties:1", "continuation");
    expect_error("=x\n", none, "e.properties:1", "without a property name");
    expect_error("bootstrap.servers=h:9092\n", none, "e.properties:1", "MCPQ_KAFKA_BROKERS");
    const char *e1[] = {"MCPQ_KAFKA_PROP_ENABLE_AUTO_OFFSET_STORE=true", NULL};
    expect_error(NULL, e1, "MCPQ_KAFKA_PROP_ENABLE_AUTO_OFFSET_STORE", "set by mcpq");
    const char *e2[] = {"MCPQ_KAFKA_PROP_SOCKET_TIMEOUT=1", NULL};
    expect_error(NULL, e2, "MCPQ_KAFKA_PROP_SOCKET_TIMEOUT", "\"socket.timeout\"");
    const char *e3[] = {"MCPQ_KAFKA_PROP_sasl_password=x", NULL};
    expect_error(NULL, e3, "MCPQ_KAFKA_PROP_sasl_password", "upper case");
    const char *e4[] = {"MCPQ_KAFKA_PROP_SASL_PASSWORD_FILE=/nonexistent/pw", NULL};
    expect_error(NULL, e4, "MCPQ_KAFKA_PROP_SASL_PASSWORD_FILE", "/nonexistent/pw");
    char err[512] = "";
    CHECK(kconf_load("/nonexistent/p", none, err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "MCPQ_KAFKA_PROPERTIES");
}

static void test_scope_and_secrets(void)
{
    CHECK_INT_EQ(kconf_scope("linger.ms"), KCONF_PRODUCER);
    CHECK_INT_EQ(kconf_scope("session.timeout.ms"), KCONF_CONSUMER);
    CHECK_INT_EQ(kconf_scope("security.protocol"), KCONF_PRODUCER | KCONF_CONSUMER);
    CHECK_INT_EQ(kconf_scope("compression.type"), KCONF_PRODUCER); /* a topic property */
    CHECK_INT_EQ(kconf_scope("auto.offset.reset"), KCONF_CONSUMER);
    CHECK_INT_EQ(kconf_scope("nope"), 0);
    CHECK(kconf_secret("sasl.password"));
    CHECK(kconf_secret("ssl.key.password"));
    CHECK(kconf_secret("ssl.keystore.password"));
    CHECK(kconf_secret("sasl.oauthbearer.client.secret"));
    CHECK(kconf_secret("ssl.key.pem"));
    CHECK(!kconf_secret("sasl.username"));
    CHECK(!kconf_secret("ssl.key.location"));

    /* a producer-only property in a consumer is skipped, not passed to librdkafka */
    const char *env[] = {"MCPQ_KAFKA_PROP_LINGER_MS=50", NULL};
    char err[512];
    kconf_t *k = kconf_load(NULL, env, err, sizeof(err));
    CHECK(k != NULL);
    rd_kafka_conf_t *conf = kconf_build(k, KCONF_CONSUMER, NULL, 0, NULL, 0, err, sizeof(err));
    CHECK(conf != NULL);
    char v[32];
    size_t vs = sizeof(v);
    CHECK(rd_kafka_conf_get(conf, "linger.ms", v, &vs) == RD_KAFKA_CONF_OK);
    CHECK(strcmp(v, "50") != 0);
    rd_kafka_conf_destroy(conf);
    kconf_free(k);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    test_file_and_env();
    TEST_PASS("properties file, env overrides, _FILE values, precedence, redaction");
    test_errors();
    TEST_PASS("errors name the property and where it came from");
    test_scope_and_secrets();
    TEST_PASS("scopes from librdkafka; secrets");
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return 0;
}
