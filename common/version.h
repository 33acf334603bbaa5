/*
 * version.h - which mcpq build this is, and the libraries it runs with (--version).
 *
 * The version is `git describe --tags --always --dirty` of the source tree, taken when the
 * binaries are built (CMakeLists.txt regenerates it on every build, so a new commit changes it
 * without re-running cmake); outside a git checkout (a tarball, an image's build context) it is
 * the project version of CMakeLists.txt, and -DMCPQ_VERSION=... overrides both. The library
 * versions are read at run time where the library offers a call for it (hiredis 0.14 has none:
 * its line says it is the version compiled against). docs/operations.md, "Installing on a host
 * (systemd)", shows the output.
 *
 * Thread-safe: read-only data.
 */
#ifndef MCPQ_VERSION_H
#define MCPQ_VERSION_H

#include <stdio.h>

/* The build's version string: letters, digits and ".-+_" only, never empty, static. */
const char *version_get(void);

/*
 * Prints the --version text on out: "<prog> <version>" on the first line, then one line per
 * library, "  <name> <version>": librdkafka, hiredis, OpenSSL, libcurl and cJSON (every binary
 * links common/), then `extra`, pairs of name and version ending with NULL (the binaries that
 * serve HTTP pass {"libmicrohttpd", MHD_get_version(), NULL}); extra may be NULL.
 */
void version_print(FILE *out, const char *prog, const char *const *extra);

/* The version a library of common/ runs with, by the name version_print() shows ("librdkafka",
 * "hiredis", "OpenSSL", "libcurl", "cJSON"): static text, NULL for another name. hiredis's is
 * the version compiled against. Also the labels of mcpq_build_info (prom.h). */
const char *version_library(const char *name);

#endif
