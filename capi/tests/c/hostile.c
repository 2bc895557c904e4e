/* What a fresh-eyes review of the C API found, each now a status code:
 * calls made while a thread or the process exits, counts and capacities
 * that would have been trusted before they were checked, views and crops,
 * a cache hit asked for more than its first import, batches and rings. */
#include "common.h"

#include <pthread.h>
#include <stdint.h>

/* A pattern source of NV12 w x h and its first frame. */
static int open_pattern(uint32_t w, uint32_t h, zerocam_source **src, zerocam_frame **frame)
{
    zerocam_source_options o = {.format = "NV12", .width = w, .height = h};
    if (zerocam_source_open("pattern", &o, src) != ZEROCAM_OK)
        return 0;
    return zerocam_source_next_frame(*src, 1000, frame) == ZEROCAM_OK;
}

/* ---- calls during exit ------------------------------------------------ */

static zerocam_tensor *stale;  /* a handle already released */
static pthread_key_t key;
static zerocam_status in_destructor = -1;

static void atexit_handler(void)
{
    /* Thread-locals are gone by now: a failed call still returns its code,
     * and the message is a fixed one rather than an abort. */
    zerocam_status s = zerocam_tensor_unref(stale);
    const char *message = zerocam_last_error();
    printf("atexit: %s (%s)\n", zerocam_status_name(s), message != NULL ? "a message" : "NULL");
    fflush(stdout);
}

static void tsd_destructor(void *unused)
{
    (void)unused;
    in_destructor = zerocam_tensor_unref(stale);
    (void)zerocam_last_error();
}

static void *thread_with_a_destructor(void *unused)
{
    (void)unused;
    pthread_setspecific(key, &key); /* the destructor runs at thread exit */
    return NULL;
}

static void failed_calls_while_a_thread_exits_return_their_status(void)
{
    size_t shape[1] = {8};
    EXPECT_OK(zerocam_tensor_new(shape, 1, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &stale));
    EXPECT_OK(zerocam_tensor_unref(stale));
    EXPECT(pthread_key_create(&key, tsd_destructor) == 0);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, thread_with_a_destructor, NULL) == 0);
    EXPECT(pthread_join(t, NULL) == 0);
    EXPECT(in_destructor == ZEROCAM_ERROR_INVALID_HANDLE);
    EXPECT(atexit(atexit_handler) == 0); /* checked by the harness: "atexit: ..." */
}

/* ---- counts checked before C memory is read --------------------------- */

static void counts_and_capacities_are_checked_before_anything_is_read_or_reserved(void)
{
    size_t shape[2] = {4, 4};
    zerocam_tensor *t = NULL;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(shape, SIZE_MAX, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_ERROR_MENTIONS("ndim 18446744073709551615");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_from_fd(0, shape, 9, ZEROCAM_DTYPE_U8, &t));
    EXPECT(t == NULL);

    zerocam_import_cache *c = NULL;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_import_cache_new(SIZE_MAX, &c));
    EXPECT_ERROR_MENTIONS("1..=4096");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_import_cache_new((size_t)1 << 40, &c));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_import_cache_new(4097, &c));
    EXPECT(c == NULL);
    EXPECT_OK(zerocam_import_cache_new(4096, &c));
    EXPECT_OK(zerocam_import_cache_unref(c));

    zerocam_source *src;
    zerocam_frame *f;
    EXPECT(open_pattern(64, 48, &src, &f));
    zerocam_model_input in;
    EXPECT_OK(zerocam_model_input_init(&in, 32, 32));
    in.batch = 2;
    zerocam_preprocessor *p;
    EXPECT_OK(zerocam_preprocessor_new(&in, ZEROCAM_DEVICE_CPU, &p));
    zerocam_frame *frames[2] = {f, f}; /* no cast: `zerocam_frame *const *` */
    zerocam_tensor *out = NULL;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_preprocessor_run_batch(p, frames, SIZE_MAX, &out));
    EXPECT_ERROR_MENTIONS("batch is 2");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_preprocessor_run_batch(p, frames, (size_t)1 << 40, &out));
    EXPECT(out == NULL);
    EXPECT_OK(zerocam_preprocessor_run_batch(p, frames, 2, &out));
    zerocam_tensor_info info;
    EXPECT_OK(zerocam_tensor_get_info(out, &info));
    EXPECT(info.ndim == 4 && info.shape[0] == 2 && info.shape[1] == 3 && info.shape[2] == 32);
    EXPECT_OK(zerocam_tensor_unref(out));
    EXPECT_OK(zerocam_preprocessor_unref(p));
    EXPECT_OK(zerocam_frame_unref(f));
    EXPECT_OK(zerocam_source_unref(src));
}

/* ---- views of two-plane images ---------------------------------------- */

static void an_nv12_view_maps_per_plane_not_whole_with_zero_strides(void)
{
    zerocam_source *src;
    zerocam_frame *f;
    EXPECT(open_pattern(64, 48, &src, &f));
    zerocam_tensor *img, *view, *y, *uv;
    EXPECT_OK(zerocam_frame_tensor(f, &img));
    EXPECT_OK(zerocam_tensor_view(img, 16, 8, 16, 16, &view));
    zerocam_map *map = NULL;
    zerocam_mapping m;
    EXPECT_STATUS(ZEROCAM_ERROR_UNSUPPORTED, zerocam_tensor_map(view, ZEROCAM_ACCESS_READ, &map, &m));
    EXPECT_ERROR_MENTIONS("zerocam_tensor_plane");
    EXPECT(map == NULL);
    EXPECT_OK(zerocam_tensor_plane(view, 0, &y));
    EXPECT_OK(zerocam_tensor_plane(view, 1, &uv));
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_plane(view, 2, &y));
    EXPECT_OK(zerocam_tensor_map(y, ZEROCAM_ACCESS_READ, &map, &m));
    EXPECT(m.shape[0] == 16 && m.shape[1] == 16 && m.strides[0] == 64 && m.strides[1] == 1);
    EXPECT_OK(zerocam_map_unmap(map));
    EXPECT_OK(zerocam_tensor_map(uv, ZEROCAM_ACCESS_READ, &map, &m));
    EXPECT(m.shape[0] == 8 && m.strides[0] == 64);
    EXPECT_OK(zerocam_map_unmap(map));
    EXPECT_OK(zerocam_tensor_unref(uv));
    EXPECT_OK(zerocam_tensor_unref(y));
    EXPECT_OK(zerocam_tensor_unref(view));
    EXPECT_OK(zerocam_tensor_unref(img));
    EXPECT_OK(zerocam_frame_unref(f));
    EXPECT_OK(zerocam_source_unref(src));
}

/* ---- a cache hit asked for more than its first import ----------------- */

static void a_cache_hit_serves_any_length_the_file_holds(void)
{
    int fd = test_memfd(8192, 1);
    zerocam_import_cache *c;
    EXPECT_OK(zerocam_import_cache_new(4, &c));
    zerocam_tensor *a, *b, *d = NULL;
    EXPECT_OK(zerocam_import_cache_get_or_import(c, fd, 0, 100, NULL, &a));
    EXPECT_OK(zerocam_import_cache_get_or_import(c, fd, 0, 8192, NULL, &b));
    zerocam_image_layout grey = {.width = 64, .height = 96, .format = ZEROCAM_FORMAT_GREY};
    EXPECT_OK(zerocam_import_cache_get_or_import(c, fd, 0, 8192, &grey, &d));
    uint64_t ia, ib, id;
    EXPECT_OK(zerocam_tensor_buffer_id(a, &ia));
    EXPECT_OK(zerocam_tensor_buffer_id(b, &ib));
    EXPECT_OK(zerocam_tensor_buffer_id(d, &id));
    EXPECT(ia == ib && ib == id);
    zerocam_cache_stats s;
    EXPECT_OK(zerocam_import_cache_get_stats(c, &s));
    EXPECT(s.misses == 1 && s.hits == 2);
    /* Past the file's end: the fd named, nothing imported. */
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD, zerocam_import_cache_get_or_import(c, fd, 4096, 8192, NULL, &a));
    EXPECT_ERROR_MENTIONS("is 8192 bytes");
    EXPECT_OK(zerocam_tensor_unref(a));
    EXPECT_OK(zerocam_tensor_unref(b));
    EXPECT_OK(zerocam_tensor_unref(d));
    EXPECT_OK(zerocam_import_cache_unref(c));
    close(fd);
}

/* ---- crops, plain tensors and rings ----------------------------------- */

static void crops_plain_tensors_and_ring_depths_get_their_codes(void)
{
    zerocam_source *src;
    zerocam_frame *f;
    EXPECT(open_pattern(64, 48, &src, &f));
    zerocam_model_input in;
    EXPECT_OK(zerocam_model_input_init(&in, 16, 16));
    zerocam_preprocessor *p;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_preprocessor_new_with_ring_depth(&in, ZEROCAM_DEVICE_CPU, 0, &p));
    EXPECT_OK(zerocam_preprocessor_new_with_ring_depth(&in, ZEROCAM_DEVICE_CPU, 1, &p));
    zerocam_tensor *out = NULL, *held;
    zerocam_region past = {.x = SIZE_MAX, .y = 0, .width = 16, .height = 16};
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_preprocessor_run_crop(p, f, &past, &out, NULL));
    EXPECT_ERROR_MENTIONS("64x48 frame");
    zerocam_region empty = {.x = 0, .y = 0, .width = 0, .height = 16};
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_preprocessor_run_crop(p, f, &empty, &out, NULL));
    size_t shape[1] = {4096};
    zerocam_tensor *plain;
    EXPECT_OK(zerocam_tensor_new(shape, 1, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &plain));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_preprocessor_run_tensor(p, plain, &out));
    EXPECT_ERROR_MENTIONS("not an image");
    EXPECT(out == NULL);
    /* A ring of one: the second run while the first result is held is BUSY. */
    EXPECT_OK(zerocam_preprocessor_run(p, f, &held));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_preprocessor_run(p, f, &out));
    /* In C's words: what a C caller can do about it. */
    EXPECT_ERROR_MENTIONS("zerocam_preprocessor_new_with_ring_depth");
    EXPECT_OK(zerocam_tensor_unref(held));
    EXPECT_OK(zerocam_preprocessor_run(p, f, &out));
    EXPECT_OK(zerocam_tensor_unref(out));
    EXPECT_OK(zerocam_tensor_unref(plain));
    EXPECT_OK(zerocam_preprocessor_unref(p));
    EXPECT_OK(zerocam_frame_unref(f));
    EXPECT_OK(zerocam_source_unref(src));
}

/* ---- a waiting next_frame does not hold up stats --------------------- */

static zerocam_source *slow;
static volatile int waiter_done;

static void *wait_for_a_frame(void *unused)
{
    (void)unused;
    zerocam_frame *f;
    /* The pattern at 0.25 fps: the second frame is about 4 s away. */
    if (zerocam_source_next_frame(slow, 10000, &f) == ZEROCAM_OK)
        zerocam_frame_unref(f);
    waiter_done = 1;
    return NULL;
}

static void stats_come_while_another_thread_waits_for_a_frame(void)
{
    zerocam_source_options o = {.format = "NV12", .width = 64, .height = 48, .fps = 0.25};
    EXPECT_OK(zerocam_source_open("pattern", &o, &slow));
    zerocam_frame *first;
    EXPECT_OK(zerocam_source_next_frame(slow, 5000, &first));
    EXPECT_OK(zerocam_frame_unref(first));
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, wait_for_a_frame, NULL) == 0);
    usleep(200 * 1000); /* the waiter is inside next_frame, holding the source */
    zerocam_source_stats st;
    EXPECT_OK(zerocam_source_get_stats(slow, &st));
    /* Returned while the waiter still waits: the counters as of frame 1. */
    int waited = waiter_done;
    EXPECT(pthread_join(t, NULL) == 0);
    EXPECT(!waited);
    EXPECT(st.frames == 1);
    EXPECT_OK(zerocam_source_get_stats(slow, &st));
    EXPECT(st.frames == 2);
    EXPECT_OK(zerocam_source_unref(slow));
}

/* ---- messages in C's words ------------------------------------------ */

static void a_shrinkable_memfd_is_refused_with_what_c_can_do_about_it(void)
{
    int fd = test_memfd(4096, 0); /* not sealable: it can always shrink */
    size_t shape[1] = {4096};
    zerocam_tensor *t = NULL;
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD, zerocam_tensor_from_fd(fd, shape, 1, ZEROCAM_DTYPE_U8, &t));
    EXPECT_ERROR_MENTIONS("MFD_ALLOW_SEALING");
    EXPECT(strstr(zerocam_last_error(), "from_fd_unchecked") == NULL); /* Rust only */
    EXPECT(t == NULL);
    close(fd);
}

int main(void)
{
    RUN(failed_calls_while_a_thread_exits_return_their_status);
    RUN(counts_and_capacities_are_checked_before_anything_is_read_or_reserved);
    RUN(an_nv12_view_maps_per_plane_not_whole_with_zero_strides);
    RUN(a_cache_hit_serves_any_length_the_file_holds);
    RUN(crops_plain_tensors_and_ring_depths_get_their_codes);
    RUN(a_shrinkable_memfd_is_refused_with_what_c_can_do_about_it);
    RUN(stats_come_while_another_thread_waits_for_a_frame);
    return test_exit_status("hostile");
}
