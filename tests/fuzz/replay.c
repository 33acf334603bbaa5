/*
 * replay.c - a main() for the libFuzzer drivers when libFuzzer is not linked (gcc, the
 * ordinary and the ASan+UBSan builds): calls LLVMFuzzerTestOneInput once per file named on
 * the command line or found (sorted, not recursively) in a directory named there, each in a
 * buffer of exactly its size so that ASan sees any read past the end. ctest runs it on
 * tests/fuzz/corpus/<name>.
 *
 *   fuzz-replay-<name> PATH...
 *
 * Prints how many inputs ran; exits 1 when a path cannot be read or no input ran at all (a
 * missing corpus must not pass), else 0. A driver that finds a broken property aborts.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest input read; libFuzzer's own inputs are far smaller (-max_len). */
#define REPLAY_MAX_BYTES (16u * 1024u * 1024u)

/* Runs the driver on the file at path. 0, or -1 when it cannot be read (reported). */
static int replay_file(const char *path)
{
    struct stat st;
    unsigned char *data = NULL;
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        goto out;
    }
    if (st.st_size < 0 || (unsigned long long)st.st_size > REPLAY_MAX_BYTES) {
        fprintf(stderr, "replay: %s: larger than %u bytes\n", path, REPLAY_MAX_BYTES);
        goto out;
    }
    /* Exactly the file's size (1 byte for an empty file, never read). */
    data = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    if (!data) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        goto out;
    }
    while (len < (size_t)st.st_size) {
        ssize_t n = read(fd, data + len, (size_t)st.st_size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "replay: %s: %s\n", path, n < 0 ? strerror(errno) : "short read");
            goto out;
        }
        len += (size_t)n;
    }
    LLVMFuzzerTestOneInput(data, len);
    rc = 0;
out:
    free(data);
    if (fd >= 0)
        close(fd);
    return rc;
}

static int skip_entry(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

/* Replays every regular file of the directory at path; adds to *ran. 0 or -1. */
static int replay_dir(const char *path, size_t *ran)
{
    struct dirent **list = NULL;
    int n = scandir(path, &list, skip_entry, alphasort), rc = 0;
    if (n < 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char file[4096];
        struct stat st;
        int w = snprintf(file, sizeof(file), "%s/%s", path, list[i]->d_name);
        if (w < 0 || (size_t)w >= sizeof(file)) {
            fprintf(stderr, "replay: %s/%s: path too long\n", path, list[i]->d_name);
            rc = -1;
        } else if (stat(file, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(file) < 0)
                rc = -1;
            else
                (*ran)++;
        }
        free(list[i]);
    }
    free(list);
    return rc;
}

int main(int argc, char **argv)
{
    size_t ran = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            if (replay_dir(argv[i], &ran) < 0)
                rc = -1;
        } else if (replay_file(argv[i]) < 0) {
            rc = -1;
        } else {
            ran++;
        }
    }
    printf("replay: %zu input%s ran\n", ran, ran == 1 ? "" : "s");
    if (ran == 0)
        fprintf(stderr, "usage: %s FILE_OR_DIR... (no input ran)\n", argv[0]);
    return rc < 0 || ran == 0 ? 1 : 0;
}
