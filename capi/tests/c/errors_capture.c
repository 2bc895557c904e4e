/* Capture and model inputs from C: sources that cannot open, every buffer
 * held, planes past the frame, model inputs out of range, a full ring, a
 * model input written into the caller's buffer. */
#include "common.h"

#include <string.h>

static zerocam_source_options small_nv12(uint32_t buffers)
{
    zerocam_source_options o = {.format = "NV12", .width = 64, .height = 48, .buffers = buffers};
    return o;
}

static void sources_that_cannot_open_say_why(void)
{
    zerocam_source *src = NULL;
    zerocam_source_options o = small_nv12(0);
    EXPECT_STATUS(ZEROCAM_ERROR_NOT_FOUND,
                  zerocam_source_open("/dev/zerocam-no-such-video", NULL, &src));
    EXPECT_ERROR_MENTIONS("/dev/zerocam-no-such-video");

    o.format = "NOT-A-FORMAT";
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_source_open("pattern", &o, &src));
    EXPECT_ERROR_MENTIONS("NOT-A-FORMAT");

    /* A width without a height. */
    o = small_nv12(0);
    o.height = 0;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_source_open("pattern", &o, &src));
    EXPECT_ERROR_MENTIONS("64x0");

    /* A frame rate below 0. */
    o = small_nv12(0);
    o.fps = -5.0;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_source_open("pattern", &o, &src));
    EXPECT_ERROR_MENTIONS("-5");

    /* One buffer is too few to capture into while the caller holds one. */
    o = small_nv12(1);
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_source_open("pattern", &o, &src));

    /* Far too many buffers: refused before any is made. */
    o = small_nv12(100000);
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_source_open("pattern", &o, &src));
    EXPECT_ERROR_MENTIONS("100000");

    /* No publisher at a unix: path. */
    EXPECT_STATUS(ZEROCAM_ERROR_NOT_FOUND,
                  zerocam_source_open("unix:/tmp/zerocam-no-such-publisher.sock", NULL, &src));
    EXPECT_ERROR_MENTIONS("/tmp/zerocam-no-such-publisher.sock");

    /* This build has no GStreamer (the harness builds without features). */
    EXPECT_STATUS(ZEROCAM_ERROR_UNSUPPORTED,
                  zerocam_source_open("gst:videotestsrc ! appsink", NULL, &src));
    EXPECT_ERROR_MENTIONS("gst");
    EXPECT(src == NULL);
}

static void next_frame_with_every_buffer_held_is_busy(void)
{
    zerocam_source_options o = small_nv12(3);
    zerocam_source *src = NULL;
    zerocam_frame *held[3] = {NULL, NULL, NULL}, *extra = NULL;
    zerocam_source_stats stats;
    EXPECT_OK(zerocam_source_open("pattern", &o, &src));
    EXPECT_OK(zerocam_source_get_stats(src, &stats));
    EXPECT(stats.buffers == 3);
    for (int i = 0; i < 3; i++)
        EXPECT_OK(zerocam_source_next_frame(src, 1000, &held[i]));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_source_next_frame(src, 100, &extra));
    EXPECT(extra == NULL);
    /* A frame's reference holds its buffer: ref + one unref keeps it held. */
    EXPECT_OK(zerocam_frame_ref(held[0]));
    EXPECT_OK(zerocam_frame_unref(held[0]));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_source_next_frame(src, 100, &extra));
    /* Giving one back frees a buffer. */
    EXPECT_OK(zerocam_frame_unref(held[0]));
    EXPECT_OK(zerocam_source_next_frame(src, 1000, &held[0]));
    for (int i = 0; i < 3; i++)
        EXPECT_OK(zerocam_frame_unref(held[i]));
    EXPECT_OK(zerocam_source_unref(src));
}

static void a_frame_outlives_its_source_handle(void)
{
    zerocam_source_options o = small_nv12(0);
    zerocam_source *src = NULL;
    zerocam_frame *frame = NULL;
    zerocam_tensor *t = NULL;
    zerocam_frame_info info;
    EXPECT_OK(zerocam_source_open("pattern", &o, &src));
    EXPECT_OK(zerocam_source_next_frame(src, 1000, &frame));
    EXPECT_OK(zerocam_source_unref(src));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_HANDLE, zerocam_source_next_frame(src, 10, &frame));
    EXPECT_OK(zerocam_frame_get_info(frame, &info));
    EXPECT(info.width == 64 && info.height == 48 && info.format == ZEROCAM_FORMAT_NV12);
    EXPECT_OK(zerocam_frame_tensor(frame, &t));
    EXPECT_OK(zerocam_frame_unref(frame));
    EXPECT_OK(zerocam_tensor_unref(t));
}

static void a_plane_past_plane_count_is_out_of_bounds(void)
{
    zerocam_source_options o = small_nv12(0);
    zerocam_source *src = NULL;
    zerocam_frame *frame = NULL;
    zerocam_frame_info info;
    zerocam_tensor *plane = NULL;
    EXPECT_OK(zerocam_source_open("pattern", &o, &src));
    EXPECT_OK(zerocam_source_next_frame(src, 1000, &frame));
    EXPECT_OK(zerocam_frame_get_info(frame, &info));
    EXPECT(info.plane_count == 2); /* NV12: Y, UV */
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_frame_plane(frame, 2, &plane));
    EXPECT_ERROR_MENTIONS("2");
    EXPECT_STATUS(ZEROCAM_ERROR_OUT_OF_BOUNDS, zerocam_frame_plane(frame, SIZE_MAX, &plane));
    EXPECT(plane == NULL);
    EXPECT_OK(zerocam_frame_plane(frame, 1, &plane));
    zerocam_tensor_info ti;
    EXPECT_OK(zerocam_tensor_get_info(plane, &ti));
    /* UV: half the rows, interleaved pairs as wide as Y, after Y. */
    EXPECT(ti.ndim == 2 && ti.shape[0] == 24 && ti.shape[1] == 64 && ti.plane_offset == 64 * 48);
    EXPECT_OK(zerocam_tensor_unref(plane));
    EXPECT_OK(zerocam_frame_unref(frame));
    EXPECT_OK(zerocam_source_unref(src));
}

/* `input` must make no preprocessor: INVALID_ARGUMENT, `out` untouched. */
#define EXPECT_BAD_INPUT(input, device, text)                                  \
    do {                                                                       \
        zerocam_preprocessor *p_ = NULL;                                       \
        EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,                          \
                      zerocam_preprocessor_new(&(input), (device), &p_));      \
        EXPECT_ERROR_MENTIONS(text);                                           \
        EXPECT(p_ == NULL);                                                    \
    } while (0)

static void model_inputs_out_of_range_are_invalid_argument(void)
{
    zerocam_model_input in;
    EXPECT_OK(zerocam_model_input_init(&in, 0, 224));
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "size 0x224");

    /* A quantization on a float dtype. */
    EXPECT_OK(zerocam_model_input_init(&in, 224, 224));
    in.has_quantization = 1;
    in.scale = 0.02f;
    in.zero_point = 128;
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "quantization");

    /* A std of 0. */
    EXPECT_OK(zerocam_model_input_init(&in, 224, 224));
    in.has_mean_std = 1;
    in.std[1] = 0.0f;
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "std of channel 1");

    /* Enum fields and the device. */
    EXPECT_OK(zerocam_model_input_init(&in, 224, 224));
    EXPECT_BAD_INPUT(in, 7, "device 7");
    in.layout = 2;
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "layout 2");
    EXPECT_OK(zerocam_model_input_init(&in, 224, 224));
    in.channels = 9;
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "channels 9");
    EXPECT_OK(zerocam_model_input_init(&in, 224, 224));
    in.fit = 3;
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "fit 3");
    EXPECT_OK(zerocam_model_input_init(&in, 224, 224));
    in.resample = 2;
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "resample 2");
    EXPECT_OK(zerocam_model_input_init(&in, 224, 224));
    in.dtype = 99;
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "dtype 99");
    EXPECT_OK(zerocam_model_input_init(&in, 224, 224));
    in.dtype = ZEROCAM_DTYPE_F64; /* a dtype, but not a model input's */
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "F64");
    EXPECT_OK(zerocam_model_input_init(&in, 224, 224));
    in.batch = 0;
    EXPECT_BAD_INPUT(in, ZEROCAM_DEVICE_CPU, "batch 0");
}

static void a_full_preprocessor_ring_is_busy_until_a_result_is_released(void)
{
    zerocam_source_options o = small_nv12(0);
    zerocam_source *src = NULL;
    zerocam_frame *frame = NULL;
    zerocam_model_input in;
    zerocam_preprocessor *pre = NULL;
    zerocam_tensor *held[3] = {NULL, NULL, NULL}, *extra = NULL;
    EXPECT_OK(zerocam_source_open("pattern", &o, &src));
    EXPECT_OK(zerocam_source_next_frame(src, 1000, &frame));
    EXPECT_OK(zerocam_model_input_init(&in, 32, 32));
    EXPECT_OK(zerocam_preprocessor_new(&in, ZEROCAM_DEVICE_CPU, &pre));

    /* The default ring depth is 3: hold three results, the fourth is BUSY. */
    for (int i = 0; i < 3; i++)
        EXPECT_OK(zerocam_preprocessor_run(pre, frame, &held[i]));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_preprocessor_run(pre, frame, &extra));
    EXPECT(extra == NULL);
    /* A map or an extra handle holds a slot as well as the result does. */
    zerocam_map *map = NULL;
    zerocam_mapping m;
    EXPECT_OK(zerocam_tensor_map(held[0], ZEROCAM_ACCESS_READ, &map, &m));
    EXPECT_OK(zerocam_tensor_unref(held[0]));
    EXPECT_STATUS(ZEROCAM_ERROR_BUSY, zerocam_preprocessor_run(pre, frame, &extra));
    EXPECT_OK(zerocam_map_unmap(map));
    EXPECT_OK(zerocam_preprocessor_run(pre, frame, &held[0]));

    /* Unsupported inputs to run_tensor: not a uint8 image. */
    size_t shape[2] = {4, 4};
    zerocam_tensor *floats = NULL;
    EXPECT_OK(zerocam_tensor_new(shape, 2, ZEROCAM_DTYPE_F32, ZEROCAM_MEMORY_MEM, &floats));
    EXPECT_OK(zerocam_tensor_unref(held[2]));
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_preprocessor_run_tensor(pre, floats, &extra));
    EXPECT(extra == NULL);
    EXPECT_OK(zerocam_tensor_unref(floats));

    for (int i = 0; i < 2; i++)
        EXPECT_OK(zerocam_tensor_unref(held[i]));
    EXPECT_OK(zerocam_preprocessor_unref(pre));
    EXPECT_OK(zerocam_frame_unref(frame));
    EXPECT_OK(zerocam_source_unref(src));
}

static int releases;
static void count_release(void *user)
{
    EXPECT(user == (void *)&releases);
    releases++;
}

static void run_into_writes_the_callers_buffer_and_threads_are_set(void)
{
    zerocam_source_options o = small_nv12(0);
    zerocam_source *src = NULL;
    zerocam_frame *frame = NULL;
    zerocam_model_input in;
    zerocam_preprocessor *pre = NULL;
    EXPECT_OK(zerocam_source_open("pattern", &o, &src));
    EXPECT_OK(zerocam_source_next_frame(src, 1000, &frame));
    EXPECT_OK(zerocam_model_input_init(&in, 32, 24));
    EXPECT(in.resample == ZEROCAM_RESAMPLE_BILINEAR);
    in.resample = ZEROCAM_RESAMPLE_AREA;
    EXPECT_OK(zerocam_preprocessor_new(&in, ZEROCAM_DEVICE_CPU, &pre));

    size_t threads = 0;
    EXPECT_OK(zerocam_preprocessor_set_threads(pre, 2));
    EXPECT_OK(zerocam_preprocessor_threads(pre, &threads));
    EXPECT(threads == 2);
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT, zerocam_preprocessor_set_threads(pre, 0));
    EXPECT_ERROR_MENTIONS("threads 0");

    /* A model runtime's input buffer, written in place. */
    static float input[3 * 24 * 32];
    for (size_t i = 0; i < 3 * 24 * 32; i++)
        input[i] = -1000.0f;
    size_t shape[4] = {1, 3, 24, 32};
    zerocam_tensor *dst = NULL;
    releases = 0;
    EXPECT_OK(zerocam_tensor_wrap(input, sizeof input, shape, 4, ZEROCAM_DTYPE_F32,
                                  count_release, &releases, &dst));
    zerocam_placement placed;
    EXPECT_OK(zerocam_preprocessor_run_into(pre, frame, NULL, dst, &placed));
    EXPECT(placed.model_width == 32 && placed.target_height == 24);
    for (size_t i = 0; i < 3 * 24 * 32; i++)
        EXPECT(input[i] >= 0.0f && input[i] <= 1.0f);
    zerocam_map *map = NULL;
    zerocam_mapping m;
    EXPECT_OK(zerocam_tensor_map(dst, ZEROCAM_ACCESS_READ, &map, &m));
    EXPECT(m.data == (void *)input);
    EXPECT_OK(zerocam_map_unmap(map));
    /* The same values as the ring's result. */
    zerocam_tensor *ring = NULL;
    EXPECT_OK(zerocam_preprocessor_run(pre, frame, &ring));
    EXPECT_OK(zerocam_tensor_map(ring, ZEROCAM_ACCESS_READ, &map, &m));
    EXPECT(memcmp(m.data, input, sizeof input) == 0);
    EXPECT_OK(zerocam_map_unmap(map));
    EXPECT_OK(zerocam_tensor_unref(ring));
    EXPECT(releases == 0);
    EXPECT_OK(zerocam_tensor_unref(dst));
    EXPECT(releases == 1);

    /* Another shape: named, nothing written. */
    size_t wrong[4] = {1, 3, 32, 24};
    EXPECT_OK(zerocam_tensor_wrap(input, sizeof input, wrong, 4, ZEROCAM_DTYPE_F32, NULL, NULL,
                                  &dst));
    input[0] = -5.0f;
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_preprocessor_run_into(pre, frame, NULL, dst, NULL));
    EXPECT_ERROR_MENTIONS("[1, 3, 24, 32]");
    EXPECT(input[0] == -5.0f);
    EXPECT_OK(zerocam_tensor_unref(dst));
    dst = NULL;
    /* Too few bytes and NULL data: refused, and released once all the same. */
    EXPECT_STATUS(ZEROCAM_ERROR_INVALID_ARGUMENT,
                  zerocam_tensor_wrap(input, 16, shape, 4, ZEROCAM_DTYPE_F32, count_release,
                                      &releases, &dst));
    EXPECT(releases == 2 && dst == NULL);
    EXPECT_STATUS(ZEROCAM_ERROR_NULL_ARGUMENT,
                  zerocam_tensor_wrap(NULL, 16, shape, 4, ZEROCAM_DTYPE_F32, count_release,
                                      &releases, &dst));
    EXPECT(releases == 3);

    EXPECT_OK(zerocam_preprocessor_unref(pre));
    EXPECT_OK(zerocam_frame_unref(frame));
    EXPECT_OK(zerocam_source_unref(src));
}

int main(void)
{
    RUN(sources_that_cannot_open_say_why);
    RUN(next_frame_with_every_buffer_held_is_busy);
    RUN(a_frame_outlives_its_source_handle);
    RUN(a_plane_past_plane_count_is_out_of_bounds);
    RUN(model_inputs_out_of_range_are_invalid_argument);
    RUN(a_full_preprocessor_ring_is_busy_until_a_result_is_released);
    RUN(run_into_writes_the_callers_buffer_and_threads_are_set);
    return test_exit_status("errors_capture");
}
