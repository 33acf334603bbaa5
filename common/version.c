#include "version.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <openssl/crypto.h>

/* MCPQ_BUILD_VERSION: generated at build time into the build's generated/ folder
 * (CMakeLists.txt, "The version"). */
#include "mcpq_build_version.h"

#define STR_(x) #x
#define STR(x) STR_(x)

const char *version_get(void)
{
    return MCPQ_BUILD_VERSION;
}

void version_print(FILE *out, const char *prog, const char *const *extra)
{
    fprintf(out, "%s %s\n", prog, version_get());
    fprintf(out, "  librdkafka %s\n", rd_kafka_version_str());
    fprintf(out, "  hiredis %s (compiled against; hiredis 0.14 has no run-time version call)\n",
            STR(HIREDIS_MAJOR) "." STR(HIREDIS_MINOR) "." STR(HIREDIS_PATCH));
    fprintf(out, "  OpenSSL %s\n", OpenSSL_version(OPENSSL_VERSION_STRING));
    fprintf(out, "  libcurl %s\n", curl_version_info(CURLVERSION_NOW)->version);
    fprintf(out, "  cJSON %s\n", cJSON_Version());
    for (size_t i = 0; extra && extra[i] && extra[i + 1]; i += 2)
        fprintf(out, "  %s %s\n", extra[i], extra[i + 1]);
}
