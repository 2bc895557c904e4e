/* A tiny test kit for zerocam's C API tests: each test is a function that
 * returns at its first failed expectation; RUN prints its name and result;
 * main returns test_exit_status(). Header-only: each test program includes
 * it once, first (it defines _GNU_SOURCE). */
#ifndef ZEROCAM_TEST_COMMON_H
#define ZEROCAM_TEST_COMMON_H

#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "zerocam.h"

static int test_failures;
static int test_count;

/* `call` must return `expected`; else print file:line, both names and the
 * thread's last error, and end the test. */
#define EXPECT_STATUS(expected, call)                                          \
    do {                                                                       \
        zerocam_status want_ = (expected);                                     \
        zerocam_status got_ = (call);                                          \
        if (got_ != want_) {                                                   \
            fprintf(stderr,                                                    \
                    "%s:%d: %s\n    expected %s, got %s\n    last error: %s\n", \
                    __FILE__, __LINE__, #call, zerocam_status_name(want_),     \
                    zerocam_status_name(got_), zerocam_last_error());          \
            test_failures++;                                                   \
            return;                                                            \
        }                                                                      \
    } while (0)

#define EXPECT_OK(call) EXPECT_STATUS(ZEROCAM_OK, call)

/* `cond` must hold. */
#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: expected %s\n    last error: %s\n",        \
                    __FILE__, __LINE__, #cond, zerocam_last_error());          \
            test_failures++;                                                   \
            return;                                                            \
        }                                                                      \
    } while (0)

/* The thread's last error must contain `text` (the value the call got). */
#define EXPECT_ERROR_MENTIONS(text)                                            \
    do {                                                                       \
        const char *message_ = zerocam_last_error();                           \
        if (strstr(message_, (text)) == NULL) {                                \
            fprintf(stderr, "%s:%d: last error does not mention \"%s\": %s\n", \
                    __FILE__, __LINE__, (text), message_);                     \
            test_failures++;                                                   \
            return;                                                            \
        }                                                                      \
    } while (0)

#define RUN(test)                                                              \
    do {                                                                       \
        int before_ = test_failures;                                           \
        printf("c-test %s ... ", #test);                                       \
        fflush(stdout);                                                        \
        test();                                                                \
        test_count++;                                                          \
        printf("%s\n", test_failures == before_ ? "ok" : "FAILED");            \
    } while (0)

/* Prints the summary; main's exit status. */
static inline int test_exit_status(const char *program)
{
    printf("%s: %d tests, %d failed\n", program, test_count, test_failures);
    return test_failures == 0 ? 0 : 1;
}

/* A memfd of `size` bytes; sealable unless `sealable` is 0 (then it can
 * always shrink: zerocam refuses it). */
static inline int test_memfd(size_t size, int sealable)
{
    int fd = memfd_create("zerocam-test", MFD_CLOEXEC | (sealable ? MFD_ALLOW_SEALING : 0));
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        perror("memfd_create");
        exit(2);
    }
    return fd;
}

/* An fd number that is not open now (one that just was). */
static inline int test_closed_fd(void)
{
    int fd = test_memfd(4096, 1);
    close(fd);
    return fd;
}

/* This process's open fds. */
static inline int test_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

#endif /* ZEROCAM_TEST_COMMON_H */
