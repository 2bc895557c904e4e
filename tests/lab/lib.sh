# shellcheck shell=bash
# Shared helpers for the kernel lab scripts (sourced, not run).

# Bump when the prepared layout changes: `prepare` then rebuilds everything.
LAB_LAYOUT=2
LAB_DIR=${ZEROCAM_LAB_DIR:-$HOME/.cache/zerocam/lab}
LAB_STAMP=$LAB_DIR/stamp
LAB_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# die REASON: one line on stderr, exit non-zero.
die() {
    echo "zerocam-lab: $*" >&2
    exit "${LAB_DIE_STATUS:-125}"
}

note() { echo "zerocam-lab: $*" >&2; }

# stamp_get KEY: print a value recorded in the stamp file.
stamp_get() {
    sed -n "s/^$1=//p" "$LAB_STAMP" 2>/dev/null | head -n1
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

# The Debian packages installed in the guest's trixie root.
lab_guest_packages() {
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
