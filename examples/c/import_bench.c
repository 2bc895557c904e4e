/* What the C API costs a decoder loop or a GStreamer element per frame,
 * against the one syscall it cannot avoid: for a pool of 4 dma-bufs (memfds
 * on a host without a dma-buf device; any fd zerocam imports),
 *   fstat                       the floor: the cache key's syscall
 *   get_or_import + unref       a cache hit: the same tensor, no dup, no map
 *   map(READ) + unmap           a CPU map of it (a dma-buf's sync bracket)
 *   tensor_ref + unref          a handle's reference count
 * each over N calls (argv[1], default 1,000,000), nanoseconds per call.
 *
 *   import_bench [N]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zerocam.h"

#define POOL 4
#define SIZE (640 * 360 * 3 / 2)

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void check(zerocam_status s, const char *what)
{
    if (s != ZEROCAM_OK) {
        fprintf(stderr, "import_bench: %s: %s: %s\n", what, zerocam_status_name(s),
                zerocam_last_error());
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    if (n <= 0) {
        fprintf(stderr, "usage: import_bench [N > 0]\n");
        return 2;
    }
    int fds[POOL];
    for (int i = 0; i < POOL; i++) {
        fds[i] = memfd_create("zerocam-bench", MFD_ALLOW_SEALING | MFD_CLOEXEC);
        if (fds[i] < 0 || ftruncate(fds[i], SIZE) != 0) {
            perror("import_bench: memfd");
            return 1;
        }
    }
    zerocam_import_cache *cache;
    check(zerocam_import_cache_new(16, &cache), "cache");
    zerocam_image_layout layout = {.width = 640, .height = 360, .format = ZEROCAM_FORMAT_NV12};
    zerocam_tensor *t;
    for (int i = 0; i < POOL; i++) { /* every buffer imported once */
        check(zerocam_import_cache_get_or_import(cache, fds[i], 0, SIZE, &layout, &t), "import");
        check(zerocam_tensor_unref(t), "unref");
    }

    struct stat st;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (fstat(fds[i % POOL], &st) != 0)
            return 1;
    double fstat_ns = (now_ns() - t0) / (double)n;

    t0 = now_ns();
    for (long i = 0; i < n; i++) {
        check(zerocam_import_cache_get_or_import(cache, fds[i % POOL], 0, SIZE, &layout, &t), "hit");
        check(zerocam_tensor_unref(t), "unref");
    }
    double hit_ns = (now_ns() - t0) / (double)n;

    check(zerocam_import_cache_get_or_import(cache, fds[0], 0, SIZE, &layout, &t), "hit");
    zerocam_map *map;
    zerocam_mapping m;
    t0 = now_ns();
    for (long i = 0; i < n; i++) {
        check(zerocam_tensor_map(t, ZEROCAM_ACCESS_READ, &map, &m), "map");
        check(zerocam_map_unmap(map), "unmap");
    }
    double map_ns = (now_ns() - t0) / (double)n;

    t0 = now_ns();
    for (long i = 0; i < n; i++) {
        check(zerocam_tensor_ref(t), "ref");
        check(zerocam_tensor_unref(t), "unref");
    }
    double ref_ns = (now_ns() - t0) / (double)n;
    check(zerocam_tensor_unref(t), "unref");

    zerocam_cache_stats s;
    check(zerocam_import_cache_get_stats(cache, &s), "stats");
    printf("%ld calls each, ns per call\n", n);
    printf("fstat (the floor)            %8.0f\n", fstat_ns);
    printf("get_or_import hit + unref    %8.0f  (%.1fx fstat)\n", hit_ns, hit_ns / fstat_ns);
    printf("map READ + unmap             %8.0f\n", map_ns);
    printf("tensor_ref + unref           %8.0f\n", ref_ns);
    printf("cache: misses %llu hits %llu live %zu\n", (unsigned long long)s.misses,
           (unsigned long long)s.hits, s.live);
    check(zerocam_import_cache_unref(cache), "cache unref");
    for (int i = 0; i < POOL; i++)
        close(fds[i]);
    return s.misses == POOL ? 0 : 1;
}
