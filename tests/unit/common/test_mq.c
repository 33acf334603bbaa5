/* Tests common/mq.c's producer properties as --print-config shows them (docs/kafka.md): the
 * latency defaults the ingress produces with (docs/kafka.md, "Latency"), and a user's value
 * replacing a default. */
#include "check.h"
#include "kconf.h"
#include "mq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What mq_producer_conf_print writes with the properties of env (NULL-terminated). */
static char *printed(const char *const env[])
{
    char err[256];
    kconf_t *kc = kconf_load(NULL, env, err, sizeof(err));
    CHECK(kc != NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    mq_producer_conf_print(f, kc, "127.0.0.1:9092", 30000);
    fclose(f);
    kconf_free(kc);
    return buf;
}

int main(void)
{
    const char *none[] = {NULL};
    char *out = printed(none);
    CHECK_CONTAINS(out, "linger.ms=1  # default");
    CHECK_CONTAINS(out, "socket.nagle.disable=true  # default");
    free(out);
    TEST_PASS("the producer sends without Nagle's delay and lingers 1 ms by default");

    const char *env[] = {"MCPQ_KAFKA_PROP_LINGER_MS=0.1",
                         "MCPQ_KAFKA_PROP_SOCKET_NAGLE_DISABLE=false", NULL};
    out = printed(env);
    CHECK_CONTAINS(out, "linger.ms=0.1  # MCPQ_KAFKA_PROP_LINGER_MS");
    CHECK_CONTAINS(out, "socket.nagle.disable=false  # MCPQ_KAFKA_PROP_SOCKET_NAGLE_DISABLE");
    CHECK(strstr(out, "socket.nagle.disable=true") == NULL);
    free(out);
    TEST_PASS("a user's linger.ms and socket.nagle.disable replace the defaults");
    return TEST_EXIT();
}
