# shellcheck shell=bash
# Shared helpers for the kernel lab scripts (sourced, not run).

# Bump when the prepared layout changes: `prepare` then rebuilds everything.
LAB_LAYOUT=2
LAB_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# lab_arch ARCH: the guest's architecture, Debian's name: amd64 (the default;
# its cache is ${ZEROCAM_LAB_DIR:-$HOME/.cache/zerocam/lab}) or arm64 (the
# boards' architecture under qemu-system-aarch64's `virt` machine, TCG; its
# cache is ${ZEROCAM_LAB_ARM64_DIR:-$HOME/.cache/zerocam/lab-arm64}). Each has
# its own kernel, root, initramfs and stamp.
lab_arch() {
    case $1 in
    amd64)
        LAB_DIR=${ZEROCAM_LAB_DIR:-$HOME/.cache/zerocam/lab}
        LAB_TRIPLE=x86_64-linux-gnu LAB_QEMU=qemu-system-x86_64 LAB_CONSOLE=ttyS0
        ;;
    arm64)
        LAB_DIR=${ZEROCAM_LAB_ARM64_DIR:-$HOME/.cache/zerocam/lab-arm64}
        LAB_TRIPLE=aarch64-linux-gnu LAB_QEMU=qemu-system-aarch64 LAB_CONSOLE=ttyAMA0
        ;;
    *) die "unknown lab architecture ${1@Q} (amd64 or arm64)" ;;
    esac
    LAB_ARCH=$1
    LAB_STAMP=$LAB_DIR/stamp
    LAB_M2M_DIR=$LAB_DIR/modules
}

# die REASON: one line on stderr, exit non-zero.
die() {
    echo "zerocam-lab: $*" >&2
    exit "${LAB_DIE_STATUS:-125}"
}

note() { echo "zerocam-lab: $*" >&2; }

# stamp_get KEY [FILE]: print a value recorded in the stamp file (or FILE).
stamp_get() {
    sed -n "s/^$1=//p" "${2:-$LAB_STAMP}" 2>/dev/null | head -n1
}

# The V4L2 memory-to-memory test drivers Debian's kernel lacks (vicodec: FWHT
# stateful encoder/decoder and stateless decoder; vim2m: a scaler; and the
# v4l2-mem2mem core they need, also not built by Debian), built by `prepare`
# from Debian's linux-source for the lab's kernel, in a cached step of its own:
# the .ko files and their stamp in $LAB_M2M_DIR, installed into the guest root's
# /usr/lib/modules/<kver>/updates/zerocam/. Bump LAB_M2M_RECIPE when the way
# they are built changes: `prepare` then builds them again (only them).
# The arm64 lab has none: building them needs the arm64 kbuild tools
# (linux-kbuild-*:arm64) run under qemu-user; its tests leave the M2M drivers out.
LAB_M2M_RECIPE=1
LAB_M2M_MODULES=(v4l2-mem2mem vicodec vim2m)

# lab_m2m_ready [built]: true when the modules were built for the lab's current
# kernel by this recipe and are installed in the guest root (with built: only
# that they were built, in $LAB_M2M_DIR/<kver>/).
lab_m2m_ready() {
    local kver m
    [[ $LAB_ARCH == arm64 ]] && return 0
    kver=$(stamp_get kver)
    [[ -n $kver && $(stamp_get kver "$LAB_M2M_DIR/stamp") == "$kver" &&
        $(stamp_get recipe "$LAB_M2M_DIR/stamp") == "$LAB_M2M_RECIPE" ]] || return 1
    for m in "${LAB_M2M_MODULES[@]}"; do
        [[ -s $LAB_M2M_DIR/$kver/$m.ko ]] || return 1
        [[ ${1:-} == built || -s $LAB_DIR/rootfs/usr/lib/modules/$kver/updates/zerocam/$m.ko ]] || return 1
    done
}

# An id of the initramfs' /init: when it changes, prepare rebuilds the initramfs.
lab_initramfs_id() {
    sha256sum "$LAB_HERE/initramfs-init" | cut -c1-16
}

# lab_is_prepared [noinitrd]: true when the stamp matches this layout and its
# files exist (with noinitrd: whatever the initramfs).
lab_is_prepared() {
    [[ -f $LAB_STAMP ]] || return 1
    [[ $(stamp_get layout) == "$LAB_LAYOUT" ]] || return 1
    [[ ${1:-} == noinitrd || $(stamp_get initramfs) == "$(lab_initramfs_id)" ]] || return 1
    [[ $(stamp_get packages) == "$(lab_guest_packages | tr '\n' ' ')" ]] || return 1
    local kver
    kver=$(stamp_get kver)
    [[ -n $kver && -f $LAB_DIR/kernel/boot/vmlinuz-$kver && -f $LAB_DIR/initrd.img &&
        -x $LAB_DIR/rootfs/usr/bin/bash ]]
}

# Unmount whatever is mounted at or below $1 (deepest first).
unmount_below() {
    local dir m
    dir=$(realpath -m "$1")
    awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts |
        sort -r | while read -r m; do umount -l "$m" || true; done
}

# Remove a file or folder of the cache, never crossing into a mounted file system.
remove_tree() {
    [[ -e $1 || -L $1 ]] || return 0
    unmount_below "$1"
    rm -rf --one-file-system "$1"
}

# The Debian mirror the host already uses: the first `deb` source whose suites
# name the host's own codename (deb822 .sources files, then sources.list).
host_mirror() {
    local codename f
    # shellcheck disable=SC1091
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [[ -n $codename ]] || return 1
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        awk -v cn="$codename" '
            function flush() { if (deb && ok && uri != "") { print uri; exit } deb = ok = 0; uri = "" }
            /^[ \t]*$/ { flush(); next }
            /^[ \t]*#/ { next }
            tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
            tolower($1) == "uris:" { uri = $2 }
            tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == cn) ok = 1 }
            END { flush() }' "$f"
    done | head -n1 | grep . && return 0
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk -v cn="$codename" '$1 == "deb" { sub(/\[[^]]*\][ \t]*/, ""); if ($3 == cn) { print $2; exit } }' | grep .
}

# The Debian packages installed in the guest's trixie root. The arm64 root
# has what its tests run (V4L2, udev, Mesa, Python with numpy and pytest):
# no compilers (its test binaries are cross-built on the host) and no
# libcamera (its lab tests are built in the amd64 root).
lab_guest_packages() {
    if [[ $LAB_ARCH == arm64 ]]; then
        cat <<'PKGS'
v4l-utils
kmod
udev
bash
libegl1
libgles2
libegl-mesa0
libgl1-mesa-dri
mesa-vulkan-drivers
mesa-utils-bin
python3
python3-numpy
python3-pytest
PKGS
        return
    fi
    cat <<'PKGS'
v4l-utils
gstreamer1.0-tools
gstreamer1.0-plugins-base
gstreamer1.0-plugins-good
libcamera-tools
libcamera-ipa
libcamera-dev
libegl1
libgles2
libegl-mesa0
libgl1-mesa-dri
mesa-vulkan-drivers
mesa-utils-bin
kmod
udev
bash
pkg-config
g++
cmake
make
nasm
libclang-dev
libegl-dev
libgles-dev
libdrm-dev
libgbm-dev
python3
python3-numpy
python3-pytest
python3-opencv
PKGS
}

lab_arch "${ZEROCAM_LAB_ARCH:-amd64}"
