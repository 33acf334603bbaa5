#include "version.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <openssl/crypto.h>
#include <string.h>

/* MCPQ_BUILD_VERSION: generated at build time into the build's generated/ folder
 * (CMakeLists.txt, "The version"). */
#include "mcpq_build_version.h"

#define STR_(x) #x
#define STR(x) STR_(x)

const char *version_get(void)
{
    return MCPQ_BUILD_VERSION;
}

static const char *const libraries[] = {"librdkafka", "hiredis", "OpenSSL", "libcurl", "cJSON"};

const char *version_library(const char *name)
{
    if (strcmp(name, "librdkafka") == 0)
        return rd_kafka_version_str();
    if (strcmp(name, "hiredis") == 0)
        return STR(HIREDIS_MAJOR) "." STR(HIREDIS_MINOR) "." STR(HIREDIS_PATCH);
    if (strcmp(name, "OpenSSL") == 0)
        return OpenSSL_version(OPENSSL_VERSION_STRING);
    if (strcmp(name, "libcurl") == 0)
        return curl_version_info(CURLVERSION_NOW)->version;
    if (strcmp(name, "cJSON") == 0)
        return cJSON_Version();
    return NULL;
}

void version_print(FILE *out, const char *prog, const char *const *extra)
{
    fprintf(out, "%s %s\n", prog, version_get());
    for (size_t i = 0; i < sizeof(libraries) / sizeof(libraries[0]); i++)
        fprintf(out, "  %s %s%s\n", libraries[i], version_library(libraries[i]),
                strcmp(libraries[i], "hiredis") == 0
                    ? " (compiled against; hiredis 0.14 has no run-time version call)"
                    : "");
    for (size_t i = 0; extra && extra[i] && extra[i + 1]; i += 2)
        fprintf(out, "  %s %s\n", extra[i], extra[i + 1]);
}
