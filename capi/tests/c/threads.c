/* Four threads at once: each makes, maps, views and releases its own
 * tensors, takes and drops references and read maps on one shared tensor,
 * and looks up one shared buffer in one shared import cache. At the end
 * every handle is gone exactly once and no fd is left open. */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>

#define THREADS 4
#define ROUNDS 1000

static zerocam_tensor *shared;
static uint64_t shared_id;
static zerocam_import_cache *cache;
static int buffer_fd;
static uint64_t cached_id;
static atomic_int thread_failures;

/* Like EXPECT_STATUS, for a thread: count, print, end the thread. */
#define T_EXPECT(cond)                                                         \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: thread: expected %s\n    last error: %s\n", \
                    __FILE__, __LINE__, #cond, zerocam_last_error());          \
            atomic_fetch_add(&thread_failures, 1);                             \
            return NULL;                                                       \
        }                                                                      \
    } while (0)
#define T_OK(call) T_EXPECT((call) == ZEROCAM_OK)

static void *worker(void *arg)
{
    unsigned char mark = (unsigned char)(uintptr_t)arg;
    size_t shape[3] = {16, 16, 1};
    for (int round = 0; round < ROUNDS; round++) {
        /* Its own tensor: made, written, read back, viewed, released. */
        zerocam_tensor *t = NULL, *view = NULL;
        zerocam_map *map = NULL;
        zerocam_mapping m;
        T_OK(zerocam_tensor_new(shape, 3, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_SHM, &t));
        T_OK(zerocam_tensor_map(t, ZEROCAM_ACCESS_WRITE, &map, &m));
        memset(m.data, mark, m.size);
        T_OK(zerocam_map_unmap(map));
        T_OK(zerocam_tensor_view(t, 4, 4, 8, 8, &view));
        T_OK(zerocam_tensor_unref(t)); /* the view keeps the buffer */
        T_OK(zerocam_tensor_map(view, ZEROCAM_ACCESS_READ, &map, &m));
        T_EXPECT(((const unsigned char *)m.data)[0] == mark);
        T_OK(zerocam_map_unmap(map));
        T_EXPECT(zerocam_map_unmap(map) == ZEROCAM_ERROR_INVALID_HANDLE);
        T_OK(zerocam_tensor_unref(view));
        T_EXPECT(zerocam_tensor_unref(view) == ZEROCAM_ERROR_INVALID_HANDLE);
        T_EXPECT(zerocam_tensor_unref(t) == ZEROCAM_ERROR_INVALID_HANDLE);

        /* The shared tensor: a reference and a read map at a time. */
        uint64_t id = 0;
        T_OK(zerocam_tensor_ref(shared));
        T_OK(zerocam_tensor_map(shared, ZEROCAM_ACCESS_READ, &map, &m));
        T_EXPECT(((const unsigned char *)m.data)[m.size - 1] == 0xc3);
        T_OK(zerocam_tensor_buffer_id(shared, &id));
        T_EXPECT(id == shared_id);
        T_OK(zerocam_map_unmap(map));
        T_OK(zerocam_tensor_unref(shared));

        /* The shared cache: always the one cached tensor. */
        zerocam_tensor *hit = NULL;
        T_OK(zerocam_import_cache_get_or_import(cache, buffer_fd, 0, 4096, NULL, &hit));
        T_OK(zerocam_tensor_buffer_id(hit, &id));
        T_EXPECT(id == cached_id);
        T_OK(zerocam_tensor_unref(hit));
    }
    return NULL;
}

static void four_threads_share_tensors_and_a_cache_without_a_leak(void)
{
    int fds_before = test_open_fds();
    size_t shape[2] = {64, 64};
    zerocam_map *map = NULL;
    zerocam_mapping m;
    zerocam_tensor *first = NULL;

    EXPECT_OK(zerocam_tensor_new(shape, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_SHM, &shared));
    EXPECT_OK(zerocam_tensor_map(shared, ZEROCAM_ACCESS_WRITE, &map, &m));
    memset(m.data, 0xc3, m.size);
    EXPECT_OK(zerocam_map_unmap(map));
    EXPECT_OK(zerocam_tensor_buffer_id(shared, &shared_id));

    buffer_fd = test_memfd(4096, 1);
    EXPECT_OK(zerocam_import_cache_new(4, &cache));
    EXPECT_OK(zerocam_import_cache_get_or_import(cache, buffer_fd, 0, 4096, NULL, &first));
    EXPECT_OK(zerocam_tensor_buffer_id(first, &cached_id));
    EXPECT_OK(zerocam_tensor_unref(first));

    pthread_t threads[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        EXPECT(pthread_create(&threads[i], NULL, worker, (void *)(i + 1)) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    EXPECT(atomic_load(&thread_failures) == 0);

    /* Every lookup after the first was a hit. */
    zerocam_cache_stats stats;
    EXPECT_OK(zerocam_import_cache_get_stats(cache, &stats));
    EXPECT(stats.misses == 1 && stats.hits == (uint64_t)THREADS * ROUNDS && stats.live == 1);

    /* Every reference the threads took was dropped: one unref ends the
     * shared tensor, and a second finds it gone. */
    EXPECT_OK(zerocam_tensor_unref(shared));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_tensor_unref(shared));
    EXPECT_OK(zerocam_import_cache_unref(cache));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_import_cache_unref(cache));
    close(buffer_fd);

    /* Each shared-memory tensor had a memfd, the cache a dup: all closed. */
    int fds_after = test_open_fds();
    if (fds_after != fds_before)
        fprintf(stderr, "fds: %d before, %d after\n", fds_before, fds_after);
    EXPECT(fds_after == fds_before);
}

int main(void)
{
    RUN(four_threads_share_tensors_and_a_cache_without_a_leak);
    return test_exit_status("threads");
}
