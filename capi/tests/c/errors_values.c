/* Values from C: bad enums and shapes, fds that cannot be imported, views
 * and batches past the tensor, conflicting maps, memory without an fd, and
 * the import cache's arguments. */
#include "common.h"

#include <sys/stat.h>

static const size_t SHAPE[2] = {4, 8};

static void bad_dtype_memory_access_and_format_values_are_invalid_argument(void)
{
    zerocam_tensor *t = NULL, *good = NULL;
    zerocam_map *map = NULL;
    zerocam_mapping m;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(SHAPE, 2, 9, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_ERROR_MENTIONS("dtype 9");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(SHAPE, 2, (zerocam_dtype)-1, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, 5, &t));
    EXPECT_ERROR_MENTIONS("memory 5");
    /* GL buffers exist, but are never made by tensor_new. */
    EXPECT_STATUS(ZEROCAM_ERROR_UNSUPPORTED,
                  zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_PBO, &t));
    EXPECT(t == NULL);

    EXPECT_OK(zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &good));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_tensor_map(good, 0, &map, &m));
    EXPECT_ERROR_MENTIONS("access 0");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_tensor_map(good, 4, &map, &m));
    EXPECT_ERROR_MENTIONS("access 4");
    EXPECT(map == NULL);
    EXPECT_OK(zerocam_tensor_unref(good));

    int fd = test_memfd(4096, 1);
    zerocam_plane luma = {.fd = fd, .offset = 0}, chroma = {.fd = fd, .offset = 1024};
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_from_planes(32, 32, 99, &luma, &chroma, &t));
    EXPECT_ERROR_MENTIONS("format 99");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_from_planes(32, 32, ZEROCAM_FORMAT_NONE, &luma, &chroma, &t));
    /* A real format, but not a two-plane one. */
    EXPECT_STATUS(ZEROCAM_ERROR_UNSUPPORTED,
                  zerocam_tensor_from_planes(32, 32, ZEROCAM_FORMAT_RGB, &luma, &chroma, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_from_fd(fd, SHAPE, 2, 42, &t));
    EXPECT(t == NULL);
    /* The same planes in NV12 are fine. */
    EXPECT_OK(zerocam_tensor_from_planes(32, 32, ZEROCAM_FORMAT_NV12, &luma, &chroma, &t));
    EXPECT_OK(zerocam_tensor_unref(t));
    close(fd);
}

static void shapes_of_0_or_9_dims_or_a_0_extent_are_invalid_argument(void)
{
    size_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    size_t eight[8] = {1, 1, 1, 1, 1, 1, 1, 2};
    size_t zero[2] = {4, 0};
    zerocam_tensor *t = NULL;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(SHAPE, 0, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_ERROR_MENTIONS("ndim 0");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(NULL, 0, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(nine, 9, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_ERROR_MENTIONS("ndim 9");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(zero, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    int fd = test_memfd(4096, 1);
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_from_fd(fd, SHAPE, 0, ZEROCAM_DTYPE_U8, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_from_fd(fd, nine, 9, ZEROCAM_DTYPE_U8, &t));
    EXPECT(t == NULL);
    /* Eight is the most, and fine. */
    EXPECT_OK(zerocam_tensor_new(eight, 8, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    zerocam_tensor_info info;
    EXPECT_OK(zerocam_tensor_get_info(t, &info));
    EXPECT(info.ndim == 8 && info.shape[7] == 2 && info.size == 2);
    EXPECT_OK(zerocam_tensor_unref(t));
    close(fd);
}

static void a_closed_fd_is_bad_fd(void)
{
    zerocam_tensor *t = NULL;
    int closed = test_closed_fd();
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD, zerocam_tensor_from_fd(-1, SHAPE, 2, ZEROCAM_DTYPE_U8, &t));
    EXPECT_ERROR_MENTIONS("-1");
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_tensor_from_fd(closed, SHAPE, 2, ZEROCAM_DTYPE_U8, &t));
    zerocam_plane bad = {.fd = closed};
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_tensor_from_planes(32, 32, ZEROCAM_FORMAT_NV12, &bad, &bad, &t));
    EXPECT(t == NULL);
}

static void a_regular_file_a_pipe_a_shrinkable_or_short_memfd_are_bad_fd(void)
{
    zerocam_tensor *t = NULL;
    char path[] = "/tmp/zerocam-test-XXXXXX";
    int file = mkstemp(path);
    EXPECT(file >= 0);
    unlink(path);
    EXPECT(ftruncate(file, 4096) == 0);
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_tensor_from_fd(file, SHAPE, 2, ZEROCAM_DTYPE_U8, &t));
    close(file);

    int pipe_fds[2];
    EXPECT(pipe(pipe_fds) == 0);
    zerocam_status piped = zerocam_tensor_from_fd(pipe_fds[0], SHAPE, 2, ZEROCAM_DTYPE_U8, &t);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD, piped);

    /* A memfd without MFD_ALLOW_SEALING can always shrink under a map. */
    int shrinkable = test_memfd(4096, 0);
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_tensor_from_fd(shrinkable, SHAPE, 2, ZEROCAM_DTYPE_U8, &t));
    close(shrinkable);

    /* 4x8 F32 is 128 bytes: a 100-byte memfd is too small. */
    int small = test_memfd(100, 1);
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_tensor_from_fd(small, SHAPE, 2, ZEROCAM_DTYPE_F32, &t));
    /* Planes past the fd's end. */
    zerocam_plane luma = {.fd = small}, chroma = {.fd = small, .offset = 64};
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_tensor_from_planes(32, 32, ZEROCAM_FORMAT_NV12, &luma, &chroma, &t));
    EXPECT(t == NULL);
    /* Big enough for bytes: fine, and the caller keeps its own fd. */
    EXPECT_OK(zerocam_tensor_from_fd(small, SHAPE, 2, ZEROCAM_DTYPE_U8, &t));
    EXPECT(fcntl(small, F_GETFD) != -1);
    close(small);
    EXPECT_OK(zerocam_tensor_unref(t));
}

static void a_view_past_the_tensor_is_out_of_bounds_never_clamped(void)
{
    size_t hw[3] = {48, 64, 1}; /* a 64x48 one-channel image */
    zerocam_tensor *image = NULL, *view = NULL;
    EXPECT_OK(zerocam_tensor_new(hw, 3, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &image));
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_view(image, 30, 0, 40, 40, &view));
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_view(image, 0, 40, 8, 9, &view));
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_view(image, 64, 0, 1, 1, &view));
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS,
                  zerocam_tensor_view(image, SIZE_MAX, 0, 2, 1, &view)); /* x + width wraps */
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_tensor_view(image, 0, 0, 0, 4, &view));
    EXPECT(view == NULL);
    /* The largest region that fits is the whole image, same buffer. */
    EXPECT_OK(zerocam_tensor_view(image, 24, 8, 40, 40, &view));
    zerocam_tensor_info info;
    uint64_t a, b;
    EXPECT_OK(zerocam_tensor_get_info(view, &info));
    EXPECT(info.shape[0] == 40 && info.shape[1] == 40);
    EXPECT_OK(zerocam_tensor_buffer_id(image, &a));
    EXPECT_OK(zerocam_tensor_buffer_id(view, &b));
    EXPECT(a == b);
    EXPECT_OK(zerocam_tensor_unref(view));
    EXPECT_OK(zerocam_tensor_unref(image));
}

static void a_batch_index_past_the_batch_is_out_of_bounds(void)
{
    size_t nchw[4] = {2, 3, 4, 4};
    zerocam_tensor *t = NULL, *element = NULL;
    EXPECT_OK(zerocam_tensor_new(nchw, 4, ZEROCAM_DTYPE_F32, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_batch(t, 2, &element));
    EXPECT_ERROR_MENTIONS("2");
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_batch(t, SIZE_MAX, &element));
    EXPECT(element == NULL);
    EXPECT_OK(zerocam_tensor_batch(t, 1, &element));
    EXPECT_OK(zerocam_tensor_unref(element));
    EXPECT_OK(zerocam_tensor_unref(t));
}

static void a_conflicting_map_is_busy_until_released(void)
{
    zerocam_tensor *t = NULL, *view = NULL;
    zerocam_map *w = NULL, *r1 = NULL, *r2 = NULL, *other = NULL;
    zerocam_mapping m;
    size_t hw[3] = {16, 16, 1};
    EXPECT_OK(zerocam_tensor_new(hw, 3, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_SHM, &t));

    /* One writer excludes readers and writers... */
    EXPECT_OK(zerocam_tensor_map(t, ZEROCAM_ACCESS_WRITE, &w, &m));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_tensor_map(t, ZEROCAM_ACCESS_READ, &other, &m));
    EXPECT_ERROR_MENTIONS("already mapped");
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_tensor_map(t, ZEROCAM_ACCESS_READ_WRITE, &other, &m));
    /* ...through another handle on the same buffer too. */
    EXPECT_OK(zerocam_tensor_view(t, 0, 0, 8, 8, &view));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_tensor_map(view, ZEROCAM_ACCESS_READ, &other, &m));
    EXPECT(other == NULL);
    EXPECT_OK(zerocam_map_unmap(w));

    /* Readers share; a writer waits for the last of them. */
    EXPECT_OK(zerocam_tensor_map(t, ZEROCAM_ACCESS_READ, &r1, &m));
    EXPECT_OK(zerocam_tensor_map(view, ZEROCAM_ACCESS_READ, &r2, &m));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_tensor_map(t, ZEROCAM_ACCESS_WRITE, &other, &m));
    EXPECT_OK(zerocam_map_unmap(r1));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_tensor_map(t, ZEROCAM_ACCESS_WRITE, &other, &m));
    EXPECT_OK(zerocam_map_unmap(r2));
    EXPECT_OK(zerocam_tensor_map(t, ZEROCAM_ACCESS_WRITE, &w, &m));
    EXPECT_OK(zerocam_map_unmap(w));
    EXPECT_OK(zerocam_tensor_unref(view));
    EXPECT_OK(zerocam_tensor_unref(t));
}

static void heap_memory_has_no_fd_to_clone_or_identify(void)
{
    zerocam_tensor *t = NULL;
    int fd = -7;
    zerocam_fd_identity ident;
    EXPECT_OK(zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_UNSUPPORTED, zerocam_tensor_clone_fd(t, &fd));
    EXPECT(fd == -7);
    EXPECT_STATUS(ZEROCAM_ERROR_UNSUPPORTED, zerocam_tensor_fd_identity(t, &ident));
    EXPECT_OK(zerocam_tensor_unref(t));

    /* Shared memory has one: a new fd of the same file. */
    EXPECT_OK(zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_SHM, &t));
    EXPECT_OK(zerocam_tensor_clone_fd(t, &fd));
    EXPECT_OK(zerocam_tensor_fd_identity(t, &ident));
    struct stat st;
    EXPECT(fstat(fd, &st) == 0);
    EXPECT(ident.st_dev == (uint64_t)st.st_dev && ident.st_ino == (uint64_t)st.st_ino);
    EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
    EXPECT_OK(zerocam_tensor_unref(t));
}

static void import_cache_arguments_are_checked(void)
{
    zerocam_import_cache *cache = NULL;
    zerocam_tensor *t = NULL;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_import_cache_new(0, &cache));
    EXPECT_ERROR_MENTIONS("capacity 0");
    EXPECT(cache == NULL);
    EXPECT_OK(zerocam_import_cache_new(2, &cache));

    int fd = test_memfd(4096, 1);
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_import_cache_get_or_import(cache, fd, 0, 0, NULL, &t));
    EXPECT_ERROR_MENTIONS("length 0");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_import_cache_get_or_import(cache, fd, SIZE_MAX, 2, NULL, &t));
    EXPECT_ERROR_MENTIONS("overflows");
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_import_cache_get_or_import(cache, -1, 0, 16, NULL, &t));
    EXPECT_ERROR_MENTIONS("-1");
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_import_cache_get_or_import(cache, test_closed_fd(), 0, 16, NULL, &t));
    /* Past the file's end. */
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_import_cache_get_or_import(cache, fd, 4000, 200, NULL, &t));
    /* A regular file is not a buffer. */
    char path[] = "/tmp/zerocam-test-XXXXXX";
    int file = mkstemp(path);
    EXPECT(file >= 0);
    unlink(path);
    EXPECT(ftruncate(file, 4096) == 0);
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_import_cache_get_or_import(cache, file, 0, 16, NULL, &t));
    close(file);
    /* A layout that does not fit the bytes, or has no format. */
    zerocam_image_layout big = {.width = 64, .height = 64, .format = ZEROCAM_FORMAT_GREY};
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_import_cache_get_or_import(cache, fd, 0, 1024, &big, &t));
    zerocam_image_layout none = {.width = 16, .height = 16, .format = ZEROCAM_FORMAT_NONE};
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_import_cache_get_or_import(cache, fd, 0, 256, &none, &t));
    none.format = 77;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_import_cache_get_or_import(cache, fd, 0, 256, &none, &t));
    EXPECT(t == NULL);

    /* Nothing was imported by any of that. */
    zerocam_cache_stats stats;
    EXPECT_OK(zerocam_import_cache_get_stats(cache, &stats));
    EXPECT(stats.live == 0 && stats.hits == 0);
    EXPECT_OK(zerocam_import_cache_get_or_import(cache, fd, 0, 256, NULL, &t));
    EXPECT_OK(zerocam_tensor_unref(t));
    EXPECT_OK(zerocam_import_cache_get_stats(cache, &stats));
    EXPECT(stats.live == 1 && stats.misses == 1);
    EXPECT_OK(zerocam_import_cache_clear(cache));
    EXPECT_OK(zerocam_import_cache_get_stats(cache, &stats));
    EXPECT(stats.live == 0 && stats.invalidated == 1);
    close(fd);
    EXPECT_OK(zerocam_import_cache_unref(cache));
}

int main(void)
{
    RUN(bad_dtype_memory_access_and_format_values_are_invalid_argument);
    RUN(shapes_of_0_or_9_dims_or_a_0_extent_are_invalid_argument);
    RUN(a_closed_fd_is_bad_fd);
    RUN(a_regular_file_a_pipe_a_shrinkable_or_short_memfd_are_bad_fd);
    RUN(a_view_past_the_tensor_is_out_of_bounds_never_clamped);
    RUN(a_batch_index_past_the_batch_is_out_of_bounds);
    RUN(a_conflicting_map_is_busy_until_released);
    RUN(heap_memory_has_no_fd_to_clone_or_identify);
    RUN(import_cache_arguments_are_checked);
    return test_exit_status("errors_values");
}
