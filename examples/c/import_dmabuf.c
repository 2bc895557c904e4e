/* import_dmabuf.c: one buffer, two fd numbers, one cached tensor.
 *
 *   import_dmabuf memfd|udmabuf|heap|/dev/videoN
 *
 * Gets a buffer fd from the source named (a sealable memfd; a udmabuf made
 * from a memfd; a dma-buf from the system DMA heap; buffer 0 of a V4L2
 * capture device, exported with VIDIOC_EXPBUF), dups it, and imports it
 * through a zerocam import cache by both fd numbers. The cache keys on the
 * kernel identity of the buffer (st_dev, st_ino), not the fd number: the
 * first lookup imports (a miss), the second finds the same tensor (a hit,
 * the same buffer id). Bytes written through one handle are then read back
 * through the other, and straight from the fd.
 *
 * Exit status: 0 on success, 1 on an error (zerocam's message on stderr),
 * 77 when the device asked for is absent on this machine.
 */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <linux/videodev2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerocam.h"

#define SIZE (256 * 1024) /* bytes, for the buffers this program allocates */
#define ROW 256           /* the import's GREY image is ROW bytes wide */

static void fail(const char *what, zerocam_status s)
{
    fprintf(stderr, "import_dmabuf: %s: %s: %s\n", what, zerocam_status_name(s),
            zerocam_last_error());
    exit(1);
}

#define CHECK(call)                                                            \
    do {                                                                       \
        zerocam_status s_ = (call);                                            \
        if (s_ != ZEROCAM_OK)                                                  \
            fail(#call, s_);                                                   \
    } while (0)

/* An OS call failed: exit 77 when the device is absent, else 1. */
static void os_fail(const char *what, const char *path)
{
    int absent = errno == ENOENT || errno == ENODEV;
    fprintf(stderr, "import_dmabuf: %s %s: %s%s\n", what, path, strerror(errno),
            absent ? " (absent here: skipped)" : "");
    exit(absent ? 77 : 1);
}

/* A sealable memfd of `size` bytes. */
static int make_memfd(size_t size)
{
    int fd = memfd_create("zerocam-example", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
        os_fail("memfd_create/ftruncate", "");
    return fd;
}

/* A udmabuf: a memfd that cannot shrink, turned into a dma-buf. */
static int make_udmabuf(size_t size)
{
    int memfd = make_memfd(size);
    if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) != 0)
        os_fail("F_ADD_SEALS", "");
    int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (dev < 0)
        os_fail("open", "/dev/udmabuf");
    struct udmabuf_create create = {.memfd = (uint32_t)memfd,
                                     .flags = UDMABUF_FLAGS_CLOEXEC,
                                     .offset = 0,
                                     .size = size};
    int fd = ioctl(dev, UDMABUF_CREATE, &create);
    if (fd < 0)
        os_fail("UDMABUF_CREATE on", "/dev/udmabuf");
    close(dev);
    close(memfd); /* the dma-buf keeps the pages */
    return fd;
}

/* A dma-buf from the system DMA heap. */
static int make_heap_buffer(size_t size)
{
    const char *path = "/dev/dma_heap/system";
    int heap = open(path, O_RDONLY | O_CLOEXEC);
    if (heap < 0)
        os_fail("open", path);
    struct dma_heap_allocation_data alloc = {.len = size, .fd_flags = O_RDWR | O_CLOEXEC};
    if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &alloc) != 0)
        os_fail("DMA_HEAP_IOCTL_ALLOC on", path);
    close(heap);
    return (int)alloc.fd;
}

/* Buffer 0 (plane 0) of V4L2 capture device `path`, exported as a dma-buf:
 * two MMAP buffers at the device's current format. `*size` gets the
 * buffer's length, `*device` the device's fd (close it after the buffer). */
static int export_v4l2_buffer(const char *path, size_t *size, int *device)
{
    int dev = open(path, O_RDWR | O_CLOEXEC);
    if (dev < 0)
        os_fail("open", path);
    struct v4l2_capability cap;
    memset(&cap, 0, sizeof cap);
    if (ioctl(dev, VIDIOC_QUERYCAP, &cap) != 0)
        os_fail("VIDIOC_QUERYCAP on", path);
    uint32_t caps = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
    uint32_t type;
    if (caps & V4L2_CAP_VIDEO_CAPTURE_MPLANE)
        type = V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE;
    else if (caps & V4L2_CAP_VIDEO_CAPTURE)
        type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    else {
        fprintf(stderr, "import_dmabuf: %s is not a capture device\n", path);
        exit(1);
    }
    int mplane = type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE;

    struct v4l2_requestbuffers req = {.count = 2, .type = type, .memory = V4L2_MEMORY_MMAP};
    if (ioctl(dev, VIDIOC_REQBUFS, &req) != 0 || req.count < 1)
        os_fail("VIDIOC_REQBUFS on", path);

    struct v4l2_plane planes[VIDEO_MAX_PLANES];
    struct v4l2_buffer buf;
    memset(&buf, 0, sizeof buf);
    memset(planes, 0, sizeof planes);
    buf.type = type;
    buf.memory = V4L2_MEMORY_MMAP;
    buf.index = 0;
    if (mplane) {
        buf.m.planes = planes;
        buf.length = VIDEO_MAX_PLANES;
    }
    if (ioctl(dev, VIDIOC_QUERYBUF, &buf) != 0)
        os_fail("VIDIOC_QUERYBUF on", path);
    *size = mplane ? planes[0].length : buf.length;

    struct v4l2_exportbuffer exp = {.type = type, .index = 0, .plane = 0,
                                    .flags = O_RDWR | O_CLOEXEC};
    if (ioctl(dev, VIDIOC_EXPBUF, &exp) != 0)
        os_fail("VIDIOC_EXPBUF on", path);
    printf("%s: %s, %s capture, buffer 0 plane 0: %zu bytes\n", path, (const char *)cap.card,
           mplane ? "multi-planar" : "single-planar", *size);
    *device = dev;
    return exp.fd;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s memfd|udmabuf|heap|/dev/videoN\n", argv[0]);
        return 2;
    }
    if (zerocam_abi_version() != ZEROCAM_ABI_VERSION) {
        fprintf(stderr, "import_dmabuf: libzerocam ABI %u, built for %u\n",
                zerocam_abi_version(), (unsigned)ZEROCAM_ABI_VERSION);
        return 1;
    }

    const char *kind = argv[1];
    size_t size = SIZE;
    int device = -1;
    int fd;
    if (strcmp(kind, "memfd") == 0)
        fd = make_memfd(size);
    else if (strcmp(kind, "udmabuf") == 0)
        fd = make_udmabuf(size);
    else if (strcmp(kind, "heap") == 0)
        fd = make_heap_buffer(size);
    else if (strncmp(kind, "/dev/", 5) == 0)
        fd = export_v4l2_buffer(kind, &size, &device);
    else {
        fprintf(stderr, "import_dmabuf: unknown source %s\n", kind);
        return 2;
    }

    /* A second fd number for the same buffer, as another process or a
     * decoder's next round would hand it over. */
    int fd2 = dup(fd);
    if (fd2 < 0)
        os_fail("dup", "");
    printf("%s: fds %d and %d, %zu bytes\n", kind, fd, fd2, size);

    /* The import spans whole rows of a ROW-wide GREY image. */
    zerocam_image_layout layout = {.width = ROW, .height = size / ROW,
                                   .format = ZEROCAM_FORMAT_GREY};
    size_t length = layout.width * layout.height;

    zerocam_import_cache *cache = NULL;
    CHECK(zerocam_import_cache_new(8, &cache));
    zerocam_tensor *a = NULL, *b = NULL;
    CHECK(zerocam_import_cache_get_or_import(cache, fd, 0, length, &layout, &a));
    CHECK(zerocam_import_cache_get_or_import(cache, fd2, 0, length, &layout, &b));

    /* One buffer: one id, one import, one hit. */
    uint64_t id_a, id_b;
    CHECK(zerocam_tensor_buffer_id(a, &id_a));
    CHECK(zerocam_tensor_buffer_id(b, &id_b));
    zerocam_cache_stats stats;
    CHECK(zerocam_import_cache_get_stats(cache, &stats));
    printf("buffer ids %" PRIu64 " and %" PRIu64 "\n", id_a, id_b);
    printf("cache: misses %" PRIu64 " hits %" PRIu64 " live %zu\n", stats.misses, stats.hits,
           stats.live);
    int ok = id_a == id_b && stats.misses == 1 && stats.hits == 1;

    /* The cache's key is the kernel's identity of the buffer. */
    zerocam_fd_identity ident;
    CHECK(zerocam_tensor_fd_identity(b, &ident));
    struct stat st;
    if (fstat(fd2, &st) != 0)
        os_fail("fstat", "");
    printf("identity dev %" PRIu64 " ino %" PRIu64 ", fstat dev %" PRIu64 " ino %" PRIu64 "\n",
           ident.st_dev, ident.st_ino, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    ok = ok && ident.st_dev == (uint64_t)st.st_dev && ident.st_ino == (uint64_t)st.st_ino;

    /* Write through one handle... */
    zerocam_map *map = NULL;
    zerocam_mapping m;
    CHECK(zerocam_tensor_map(a, ZEROCAM_ACCESS_WRITE, &map, &m));
    unsigned char *w = m.data;
    for (size_t i = 0; i < m.size; i++)
        w[i] = (unsigned char)(i * 7 + 3);
    size_t written = m.size;
    CHECK(zerocam_map_unmap(map));

    /* ...read back through the other, and from the fd itself: no copy. */
    CHECK(zerocam_tensor_map(b, ZEROCAM_ACCESS_READ, &map, &m));
    const unsigned char *r = m.data;
    size_t bad = m.size == written ? 0 : 1;
    for (size_t i = 0; i < m.size && !bad; i++)
        bad = r[i] != (unsigned char)(i * 7 + 3);
    CHECK(zerocam_map_unmap(map));
    const unsigned char *raw = mmap(NULL, written, PROT_READ, MAP_SHARED, fd2, 0);
    if (raw == MAP_FAILED)
        os_fail("mmap", kind);
    for (size_t i = 0; i < written && !bad; i++)
        bad = raw[i] != (unsigned char)(i * 7 + 3);
    munmap((void *)raw, written);
    printf("wrote %zu bytes through one handle, read them back through the other: %s\n", written,
           bad ? "MISMATCH" : "same");
    ok = ok && !bad;

    CHECK(zerocam_tensor_unref(a));
    CHECK(zerocam_tensor_unref(b));
    CHECK(zerocam_import_cache_unref(cache));
    close(fd2);
    close(fd);
    if (device >= 0)
        close(device);
    if (!ok) {
        fprintf(stderr, "import_dmabuf: FAILED (one buffer must be one cached tensor)\n");
        return 1;
    }
    printf("ok\n");
    return 0;
}
