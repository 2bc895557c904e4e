/* capture.c: take frames from a zerocam source and checksum each one.
 *
 *   capture [SPEC [FRAMES [FORMAT]]]
 *
 * SPEC is a source as zerocam_source_open takes it ("pattern", the default:
 * the built-in test pattern at 640x480; "/dev/video0"; ...). FRAMES is how
 * many frames to take (30). FORMAT is the capture format ("NV12", the
 * pattern's default; "NV12M", "YUYV"; a device's current one by default). For each frame the program maps the frame's
 * image tensor for reading and prints its sequence number and the FNV-1a 64
 * checksum of the mapped bytes. At the end it prints the source's counters
 * and checks that every buffer plane was imported once (imports == buffers
 * x planes), however many frames went through.
 *
 * Build against an installed zerocam:
 *   cc -std=c11 capture.c $(pkg-config --cflags --libs zerocam) -o capture
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerocam.h"

/* Prints what failed (the status's name and zerocam's message, which names
 * the values that were wrong) and exits 1. */
static void fail(const char *what, zerocam_status s)
{
    fprintf(stderr, "capture: %s: %s: %s\n", what, zerocam_status_name(s),
            zerocam_last_error());
    exit(1);
}

/* Every zerocam call returns a status: check each one. */
#define CHECK(call)                                                            \
    do {                                                                       \
        zerocam_status s_ = (call);                                            \
        if (s_ != ZEROCAM_OK)                                                  \
            fail(#call, s_);                                                   \
    } while (0)

/* FNV-1a, 64 bits: folds `size` bytes at `data` into `h`. */
static uint64_t fnv1a64(uint64_t h, const unsigned char *data, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        h ^= data[i];
        h *= 0x100000001b3u;
    }
    return h;
}

/* Maps `t` for reading -- no copy: the bytes are the capture buffer's --
 * and folds them into `*h`; adds the bytes read to `*bytes`. `mapping.size`
 * is what the map spans (row padding included): read no further. */
static zerocam_status checksum(const zerocam_tensor *t, uint64_t *h, size_t *bytes)
{
    zerocam_map *map = NULL;
    zerocam_mapping mapping;
    zerocam_status s = zerocam_tensor_map(t, ZEROCAM_ACCESS_READ, &map, &mapping);
    if (s != ZEROCAM_OK)
        return s;
    *h = fnv1a64(*h, mapping.data, mapping.size);
    *bytes += mapping.size;
    return zerocam_map_unmap(map);
}

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "pattern";
    long frames = argc > 2 ? strtol(argv[2], NULL, 10) : 30;
    if (frames <= 0) {
        fprintf(stderr, "usage: %s [SPEC [FRAMES [FORMAT]]]\n", argv[0]);
        return 2;
    }

    /* A program built with one header must run against a library of the
     * same ABI. */
    if (zerocam_abi_version() != ZEROCAM_ABI_VERSION) {
        fprintf(stderr, "capture: libzerocam ABI %u, this program was built for %u\n",
                zerocam_abi_version(), (unsigned)ZEROCAM_ABI_VERSION);
        return 1;
    }
    printf("zerocam %s, source %s\n", zerocam_version(), spec);

    /* The pattern at 640x480, NV12 unless told; a device at its current
     * size, in its current format unless told. */
    int is_pattern = strcmp(spec, "pattern") == 0;
    zerocam_source_options options = {
        .format = argc > 3 ? argv[3] : is_pattern ? "NV12" : NULL,
        .width = is_pattern ? 640 : 0,
        .height = is_pattern ? 480 : 0,
    };
    zerocam_source *source = NULL;
    CHECK(zerocam_source_open(spec, &options, &source));

    for (long i = 0; i < frames; i++) {
        zerocam_frame *frame = NULL;
        CHECK(zerocam_source_next_frame(source, 2000 /* ms */, &frame));
        zerocam_frame_info info;
        CHECK(zerocam_frame_get_info(frame, &info));

        /* The frame's image, all planes, as a tensor: a new reference.
         * Planes in two buffers (NV12M) cannot be mapped as one: then map
         * each plane. */
        zerocam_tensor *image = NULL;
        CHECK(zerocam_frame_tensor(frame, &image));
        uint64_t sum = 0xcbf29ce484222325u; /* FNV-1a's offset basis */
        size_t bytes = 0;
        zerocam_status s = checksum(image, &sum, &bytes);
        for (size_t p = 0; s == ZEROCAM_ERROR_UNSUPPORTED && p < info.plane_count; p++) {
            zerocam_tensor *plane = NULL;
            CHECK(zerocam_frame_plane(frame, p, &plane));
            CHECK(checksum(plane, &sum, &bytes));
            CHECK(zerocam_tensor_unref(plane));
        }
        if (s != ZEROCAM_OK && s != ZEROCAM_ERROR_UNSUPPORTED)
            fail("mapping the frame", s);

        /* Drop our references: the last one on the frame gives its buffer
         * back to the source for the next capture. */
        CHECK(zerocam_tensor_unref(image));
        CHECK(zerocam_frame_unref(frame));
        printf("frame %" PRIu32 " %" PRIu32 "x%" PRIu32 " bytes %zu checksum %016" PRIx64 "\n",
               info.sequence, info.width, info.height, bytes, sum);
    }

    zerocam_source_stats stats;
    CHECK(zerocam_source_get_stats(source, &stats));
    CHECK(zerocam_source_unref(source));
    printf("frames %" PRIu64 " dropped %" PRIu64 "\n", stats.frames, stats.dropped);
    printf("imports %" PRIu64 " cache hits %" PRIu64 " buffers %zu planes %zu\n",
           stats.imports, stats.cache_hits, stats.buffers, stats.planes);

    /* Zero copy: each buffer plane is imported the first time its buffer
     * brings a frame, then found again in the source's import cache. After
     * at least one frame per buffer, that is buffers x planes imports. */
    uint64_t all = (uint64_t)stats.buffers * stats.planes;
    if ((uint64_t)frames >= stats.buffers ? stats.imports != all : stats.imports > all) {
        fprintf(stderr, "capture: %" PRIu64 " imports, expected buffers x planes = %" PRIu64 "\n",
                stats.imports, all);
        return 1;
    }
    printf("ok: %" PRIu64 " imports for %" PRIu64 " buffer planes\n", stats.imports, all);
    return 0;
}
