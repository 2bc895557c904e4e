/* Handles from C: NULL handles and out pointers, handles of the wrong type,
 * garbage values, double unrefs and uses after unref of every type, the out
 * parameter untouched on failure, and the last error (its values, and one
 * per thread). */
#include "common.h"

#include <pthread.h>

static const size_t SHAPE[2] = {4, 8};

/* A small heap tensor, a pattern source and one of its frames, a cache, a
 * preprocessor: one live object of every type. */
struct objects {
    zerocam_tensor *tensor;
    zerocam_source *source;
    zerocam_frame *frame;
    zerocam_import_cache *cache;
    zerocam_preprocessor *pre;
};

static int make_objects(struct objects *o)
{
    zerocam_source_options opts = {.format = "NV12", .width = 64, .height = 48};
    zerocam_model_input input;
    memset(o, 0, sizeof *o);
    return zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &o->tensor) ||
           zerocam_source_open("pattern", &opts, &o->source) ||
           zerocam_source_next_frame(o->source, 1000, &o->frame) ||
           zerocam_import_cache_new(4, &o->cache) || zerocam_model_input_init(&input, 16, 16) ||
           zerocam_preprocessor_new(&input, ZEROCAM_DEVICE_CPU, &o->pre);
}

static int free_objects(struct objects *o)
{
    return zerocam_tensor_unref(o->tensor) || zerocam_frame_unref(o->frame) ||
           zerocam_source_unref(o->source) || zerocam_import_cache_unref(o->cache) ||
           zerocam_preprocessor_unref(o->pre);
}

static void null_handles_and_out_pointers_are_null_argument(void)
{
    struct objects o;
    EXPECT_OK(make_objects(&o));
    zerocam_tensor *t = NULL;
    zerocam_tensor_info info;
    zerocam_map *map = NULL;
    zerocam_mapping mapping;
    uint64_t id;
    int fd;
    zerocam_plane plane = {.fd = -1};

    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_tensor_new(NULL, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_ERROR_MENTIONS("shape");
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, NULL));
    EXPECT_ERROR_MENTIONS("out");
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_get_info(NULL, &info));
    EXPECT_ERROR_MENTIONS("tensor is NULL");
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_get_info(o.tensor, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_tensor_map(o.tensor, ZEROCAM_ACCESS_READ, NULL, &mapping));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_tensor_map(o.tensor, ZEROCAM_ACCESS_READ, &map, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_map(NULL, ZEROCAM_ACCESS_READ, &map, &mapping));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_map_unmap(NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_ref(NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_unref(NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_buffer_id(o.tensor, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_buffer_id(NULL, &id));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_clone_fd(o.tensor, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_clone_fd(NULL, &fd));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_fd_identity(o.tensor, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_view(o.tensor, 0, 0, 1, 1, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_tensor_batch(o.tensor, 0, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_tensor_from_fd(-1, NULL, 1, ZEROCAM_DTYPE_U8, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_tensor_from_planes(4, 4, ZEROCAM_FORMAT_NV12, NULL, &plane, &t));
    EXPECT_ERROR_MENTIONS("luma");
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_tensor_from_planes(4, 4, ZEROCAM_FORMAT_NV12, &plane, NULL, &t));
    EXPECT_ERROR_MENTIONS("chroma");

    zerocam_import_cache *cache = NULL;
    zerocam_cache_stats cstats;
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_import_cache_new(4, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_import_cache_get_stats(NULL, &cstats));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_import_cache_get_stats(o.cache, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_import_cache_get_or_import(o.cache, 0, 0, 1, NULL, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_import_cache_clear(NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_import_cache_unref(NULL));
    EXPECT(cache == NULL);

    zerocam_source *src = NULL;
    zerocam_frame *frame = NULL;
    zerocam_frame_info finfo;
    zerocam_source_stats sstats;
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_source_open("pattern", NULL, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_source_next_frame(NULL, 10, &frame));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_source_next_frame(o.source, 10, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_source_get_stats(o.source, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_source_get_stats(NULL, &sstats));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_frame_get_info(NULL, &finfo));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_frame_get_info(o.frame, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_frame_tensor(o.frame, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_frame_plane(o.frame, 0, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_frame_unref(NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_source_unref(NULL));
    EXPECT(src == NULL && frame == NULL);

    zerocam_preprocessor *pre = NULL;
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_model_input_init(NULL, 16, 16));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_preprocessor_new(NULL, ZEROCAM_DEVICE_CPU, &pre));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_preprocessor_run(o.pre, o.frame, NULL));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_preprocessor_run(o.pre, NULL, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_preprocessor_run(NULL, o.frame, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT, zerocam_preprocessor_unref(NULL));
    EXPECT(pre == NULL && t == NULL);
    EXPECT_OK(free_objects(&o));
}

static void a_handle_of_another_type_is_wrong_handle_type(void)
{
    struct objects o;
    EXPECT_OK(make_objects(&o));
    zerocam_tensor_info info;
    zerocam_frame *frame = NULL;
    zerocam_tensor *t = NULL;

    /* A frame passed as a tensor. */
    EXPECT_STATUS(ZEROCAM_ERROR_WRONG_HANDLE_TYPE,
                  zerocam_tensor_get_info((zerocam_tensor *)o.frame, &info));
    EXPECT_ERROR_MENTIONS("is a zerocam_frame, not a zerocam_tensor");
    EXPECT_STATUS(ZEROCAM_ERROR_WRONG_HANDLE_TYPE, zerocam_tensor_unref((zerocam_tensor *)o.frame));
    /* A cache as a source. */
    EXPECT_STATUS(ZEROCAM_ERROR_WRONG_HANDLE_TYPE,
                  zerocam_source_next_frame((zerocam_source *)o.cache, 10, &frame));
    EXPECT_ERROR_MENTIONS("is a zerocam_import_cache, not a zerocam_source");
    EXPECT_STATUS(ZEROCAM_ERROR_WRONG_HANDLE_TYPE, zerocam_source_unref((zerocam_source *)o.cache));
    /* A tensor as a map, a source as a preprocessor, a preprocessor as a
     * frame, a tensor as a cache. */
    EXPECT_STATUS(ZEROCAM_ERROR_WRONG_HANDLE_TYPE, zerocam_map_unmap((zerocam_map *)o.tensor));
    EXPECT_STATUS(ZEROCAM_ERROR_WRONG_HANDLE_TYPE,
                  zerocam_preprocessor_run((zerocam_preprocessor *)o.source, o.frame, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_WRONG_HANDLE_TYPE,
                  zerocam_preprocessor_run(o.pre, (zerocam_frame *)o.pre, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_WRONG_HANDLE_TYPE,
                  zerocam_preprocessor_run_tensor(o.pre, (zerocam_tensor *)o.frame, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_WRONG_HANDLE_TYPE,
                  zerocam_import_cache_clear((zerocam_import_cache *)o.tensor));
    EXPECT(frame == NULL && t == NULL);
    /* Every object is still alive and unharmed. */
    EXPECT_OK(zerocam_tensor_get_info(o.tensor, &info));
    EXPECT_OK(free_objects(&o));
}

static void a_garbage_handle_is_invalid_handle_naming_it(void)
{
    zerocam_tensor_info info;
    zerocam_frame *frame = NULL;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE,
                  zerocam_tensor_get_info((zerocam_tensor *)0x1234, &info));
    EXPECT_ERROR_MENTIONS("0x1234");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_tensor_unref((zerocam_tensor *)0x1234));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_tensor_ref((zerocam_tensor *)&info));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_map_unmap((zerocam_map *)0x1234));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE,
                  zerocam_source_next_frame((zerocam_source *)0x5678, 10, &frame));
    EXPECT_ERROR_MENTIONS("0x5678");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_frame_unref((zerocam_frame *)0x1));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE,
                  zerocam_import_cache_clear((zerocam_import_cache *)(uintptr_t)-1));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE,
                  zerocam_preprocessor_unref((zerocam_preprocessor *)0xdeadbeef));
    EXPECT(frame == NULL);
}

static void double_unref_and_use_after_unref_are_invalid_handle(void)
{
    struct objects o;
    EXPECT_OK(make_objects(&o));
    zerocam_tensor_info info;
    zerocam_frame_info finfo;
    zerocam_frame *frame = NULL;
    zerocam_cache_stats cstats;
    zerocam_tensor *t = NULL;
    zerocam_map *map = NULL;
    zerocam_mapping mapping;

    /* A map: unmap twice. */
    EXPECT_OK(zerocam_tensor_map(o.tensor, ZEROCAM_ACCESS_READ, &map, &mapping));
    EXPECT_OK(zerocam_map_unmap(map));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_map_unmap(map));
    EXPECT_ERROR_MENTIONS("already released");

    /* A tensor with two references: the second unref ends it. */
    EXPECT_OK(zerocam_tensor_ref(o.tensor));
    EXPECT_OK(zerocam_tensor_unref(o.tensor));
    EXPECT_OK(zerocam_tensor_get_info(o.tensor, &info));
    EXPECT_OK(zerocam_tensor_unref(o.tensor));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_tensor_unref(o.tensor));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_tensor_get_info(o.tensor, &info));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_tensor_ref(o.tensor));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE,
                  zerocam_tensor_map(o.tensor, ZEROCAM_ACCESS_READ, &map, &mapping));

    /* A frame. */
    EXPECT_OK(zerocam_frame_unref(o.frame));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_frame_unref(o.frame));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_frame_get_info(o.frame, &finfo));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_frame_tensor(o.frame, &t));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_preprocessor_run(o.pre, o.frame, &t));

    /* A source. */
    EXPECT_OK(zerocam_source_unref(o.source));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_source_unref(o.source));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_source_next_frame(o.source, 10, &frame));

    /* A cache. */
    EXPECT_OK(zerocam_import_cache_unref(o.cache));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_import_cache_unref(o.cache));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_import_cache_get_stats(o.cache, &cstats));

    /* A preprocessor. */
    EXPECT_OK(zerocam_preprocessor_unref(o.pre));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_preprocessor_unref(o.pre));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_preprocessor_ref(o.pre));
    EXPECT(frame == NULL && t == NULL);
}

static void a_map_keeps_its_tensor_alive_after_the_last_unref(void)
{
    zerocam_tensor *t = NULL;
    zerocam_map *map = NULL;
    zerocam_mapping mapping;
    EXPECT_OK(zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_SHM, &t));
    EXPECT_OK(zerocam_tensor_map(t, ZEROCAM_ACCESS_WRITE, &map, &mapping));
    EXPECT_OK(zerocam_tensor_unref(t));
    memset(mapping.data, 0x5a, mapping.size); /* still valid memory */
    EXPECT_OK(zerocam_map_unmap(map));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_tensor_unref(t));
}

/* Every out parameter keeps its value when the call fails. */
static void out_parameters_are_untouched_on_failure(void)
{
    zerocam_tensor *const SENTINEL = (zerocam_tensor *)0x5e771e;
    zerocam_tensor *t = SENTINEL, *image = NULL;
    size_t bad_shape[1] = {0};
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(SHAPE, 2, 99, ZEROCAM_MEMORY_MEM, &t));
    EXPECT(t == SENTINEL);
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(bad_shape, 1, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    EXPECT(t == SENTINEL);
    int pipe_fds[2];
    EXPECT(pipe(pipe_fds) == 0);
    zerocam_status piped = zerocam_tensor_from_fd(pipe_fds[0], SHAPE, 2, ZEROCAM_DTYPE_U8, &t);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD, piped);
    EXPECT(t == SENTINEL);

    size_t hw[3] = {48, 64, 1};
    EXPECT_OK(zerocam_tensor_new(hw, 3, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &image));
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_view(image, 30, 0, 40, 40, &t));
    EXPECT(t == SENTINEL);
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_batch(image, 48, &t));
    EXPECT(t == SENTINEL);

    int fd = -42;
    EXPECT_STATUS(ZEROCAM_ERROR_UNSUPPORTED, zerocam_tensor_clone_fd(image, &fd));
    EXPECT(fd == -42);

    zerocam_tensor_info info, before;
    memset(&info, 0xab, sizeof info);
    before = info;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_tensor_get_info(SENTINEL, &info));
    EXPECT(memcmp(&info, &before, sizeof info) == 0);

    zerocam_fd_identity ident, ident_before;
    memset(&ident, 0xab, sizeof ident);
    ident_before = ident;
    EXPECT_STATUS(ZEROCAM_ERROR_UNSUPPORTED, zerocam_tensor_fd_identity(image, &ident));
    EXPECT(memcmp(&ident, &ident_before, sizeof ident) == 0);

    uint64_t id = 77;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_tensor_buffer_id(SENTINEL, &id));
    EXPECT(id == 77);

    /* A BUSY map leaves both of its outs alone. */
    zerocam_map *w = NULL, *map = (zerocam_map *)0x5e771e;
    zerocam_mapping mapping, mapping_before, wm;
    memset(&mapping, 0xab, sizeof mapping);
    mapping_before = mapping;
    EXPECT_OK(zerocam_tensor_map(image, ZEROCAM_ACCESS_WRITE, &w, &wm));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_tensor_map(image, ZEROCAM_ACCESS_READ, &map, &mapping));
    EXPECT(map == (zerocam_map *)0x5e771e);
    EXPECT(memcmp(&mapping, &mapping_before, sizeof mapping) == 0);
    EXPECT_OK(zerocam_map_unmap(w));

    zerocam_import_cache *cache = (zerocam_import_cache *)0x5e771e;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_import_cache_new(0, &cache));
    EXPECT(cache == (zerocam_import_cache *)0x5e771e);

    zerocam_source *src = (zerocam_source *)0x5e771e;
    EXPECT_STATUS(ZEROCAM_ERROR_NOT_FOUND, zerocam_source_open("/dev/zerocam-no-such-video", NULL, &src));
    EXPECT(src == (zerocam_source *)0x5e771e);

    zerocam_model_input input;
    zerocam_preprocessor *pre = (zerocam_preprocessor *)0x5e771e;
    EXPECT_OK(zerocam_model_input_init(&input, 0, 16));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_preprocessor_new(&input, ZEROCAM_DEVICE_CPU, &pre));
    EXPECT(pre == (zerocam_preprocessor *)0x5e771e);
    EXPECT_OK(zerocam_tensor_unref(image));
}

/* The last error names the values that were wrong. */
static void the_last_error_names_the_values(void)
{
    zerocam_tensor *t = NULL, *image = NULL;
    zerocam_import_cache *cache = NULL;
    size_t hw[3] = {48, 64, 1};
    EXPECT_OK(zerocam_import_cache_new(2, &cache));
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_import_cache_get_or_import(cache, 4242, 0, 16, NULL, &t));
    EXPECT_ERROR_MENTIONS("zerocam_import_cache_get_or_import");
    EXPECT_ERROR_MENTIONS("4242");
    EXPECT_OK(zerocam_import_cache_unref(cache));
    int small = test_memfd(100, 1);
    EXPECT_STATUS(ZEROCAM_ERROR_BAD_FD,
                  zerocam_tensor_from_fd(small, SHAPE, 2, ZEROCAM_DTYPE_F64, &t));
    close(small);
    EXPECT_ERROR_MENTIONS("zerocam_tensor_from_fd");
    EXPECT_ERROR_MENTIONS("100"); /* the file's size */
    EXPECT_ERROR_MENTIONS("256"); /* the bytes the shape needs */
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(SHAPE, 2, 99, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_ERROR_MENTIONS("dtype 99");
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(SHAPE, 9, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_ERROR_MENTIONS("ndim 9");
    EXPECT_OK(zerocam_tensor_new(hw, 3, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &image));
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_view(image, 30, 0, 40, 40, &t));
    EXPECT_ERROR_MENTIONS("zerocam_tensor_view");
    EXPECT_ERROR_MENTIONS("x=30");
    EXPECT_ERROR_MENTIONS("40x40");
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_tensor_batch(image, 48, &t));
    EXPECT_ERROR_MENTIONS("48");
    EXPECT_OK(zerocam_tensor_unref(image));
    zerocam_source *src = NULL;
    EXPECT_STATUS(ZEROCAM_ERROR_NOT_FOUND, zerocam_source_open("/dev/zerocam-no-such-video", NULL, &src));
    EXPECT_ERROR_MENTIONS("/dev/zerocam-no-such-video");
    /* A success keeps the message (it is the last *failed* call's). */
    EXPECT_OK(zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, ZEROCAM_MEMORY_MEM, &t));
    EXPECT_ERROR_MENTIONS("/dev/zerocam-no-such-video");
    EXPECT_OK(zerocam_tensor_unref(t));
}

/* Thread B's view of the last error, and whether B's own failure was
 * recorded for B. */
struct other_thread {
    char seen_at_start[512];
    char own[512];
    pthread_barrier_t *barrier;
};

static void *fail_on_another_thread(void *arg)
{
    struct other_thread *b = arg;
    zerocam_tensor *t = NULL;
    snprintf(b->seen_at_start, sizeof b->seen_at_start, "%s", zerocam_last_error());
    zerocam_import_cache_new(0, (zerocam_import_cache **)&t); /* capacity 0 */
    pthread_barrier_wait(b->barrier); /* main fails again now */
    pthread_barrier_wait(b->barrier);
    snprintf(b->own, sizeof b->own, "%s", zerocam_last_error());
    return NULL;
}

static void the_last_error_is_per_thread(void)
{
    zerocam_tensor *t = NULL;
    pthread_barrier_t barrier;
    struct other_thread b = {.barrier = &barrier};
    pthread_t thread;

    /* Thread A (this one) fails first. */
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_new(SHAPE, 2, ZEROCAM_DTYPE_U8, 4343, &t));
    EXPECT(pthread_barrier_init(&barrier, NULL, 2) == 0);
    EXPECT(pthread_create(&thread, NULL, fail_on_another_thread, &b) == 0);
    pthread_barrier_wait(&barrier); /* B has failed */
    EXPECT_ERROR_MENTIONS("4343");  /* A still sees its own */
    zerocam_tensor_new(SHAPE, 2, 123, ZEROCAM_MEMORY_MEM, &t); /* A fails again */
    pthread_barrier_wait(&barrier);
    pthread_join(thread, NULL);
    pthread_barrier_destroy(&barrier);
    EXPECT_ERROR_MENTIONS("dtype 123");

    EXPECT(strcmp(b.seen_at_start, "") == 0); /* A's failure is not B's */
    EXPECT(strstr(b.own, "capacity 0") != NULL);
    EXPECT(strstr(b.own, "dtype 123") == NULL);
    EXPECT(t == NULL);
}

static void status_names_are_the_constants(void)
{
    EXPECT(strcmp(zerocam_status_name(ZEROCAM_OK), "ZEROCAM_OK") == 0);
    EXPECT(strcmp(zerocam_status_name(ZEROCAM_ERROR_BAD_FD), "ZEROCAM_ERROR_BAD_FD") == 0);
    EXPECT(strcmp(zerocam_status_name(ZEROCAM_ERROR_PANIC), "ZEROCAM_ERROR_PANIC") == 0);
    EXPECT(strcmp(zerocam_status_name(15), "ZEROCAM_UNKNOWN_STATUS") == 0);
    EXPECT(strcmp(zerocam_status_name(-1), "ZEROCAM_UNKNOWN_STATUS") == 0);
    EXPECT(zerocam_abi_version() == ZEROCAM_ABI_VERSION);
    EXPECT(strcmp(zerocam_version(), "0.1.0") == 0);
}

int main(void)
{
    RUN(null_handles_and_out_pointers_are_null_argument);
    RUN(a_handle_of_another_type_is_wrong_handle_type);
    RUN(a_garbage_handle_is_invalid_handle_naming_it);
    RUN(double_unref_and_use_after_unref_are_invalid_handle);
    RUN(a_map_keeps_its_tensor_alive_after_the_last_unref);
    RUN(out_parameters_are_untouched_on_failure);
    RUN(the_last_error_names_the_values);
    RUN(the_last_error_is_per_thread);
    RUN(status_names_are_the_constants);
    return test_exit_status("errors_handles");
}
