# shellcheck shell=bash
# .ci/run's machinery: each step timed, a summary table at the end (also when
# a step fails: it is marked, and the run stops there), the disk's peak use
# sampled while the run lasts, and the compiler cache (sccache) started and
# reported. Sourced by .ci/run; nothing here builds or tests anything.

# ci_pin_checkout ARGS: run .ci/run again from one fixed path. sccache keys a
# compilation by its working directory and the CARGO_MANIFEST_DIR and OUT_DIR
# it is given, and cargo runs every workspace crate's rustc in the clone: a
# clone at a new path each run (as CI makes them) missed for every workspace
# crate and build script's output (3,743 new cache entries in one run, 67
# minutes against 49 from the same path). A private mount namespace binds
# the clone (and ../shared beside it) at $ZEROCAM_CI_PIN/main (default
# /var/tmp/zerocam-ci): private, so two runs at once each see their own
# clone there, and the binds go when the run ends. Needs root (unshare);
# without it the run stays where it is and only misses the cache.
ci_pin_checkout() {
    local pin=${ZEROCAM_CI_PIN:-/var/tmp/zerocam-ci} here
    here=$(pwd -P)
    [[ -n ${ZEROCAM_CI_PINNED:-} || $here == "$pin/main" ]] && return 0
    if ((EUID != 0)) || ! command -v unshare >/dev/null; then
        echo "ci: not root or no unshare: running at $here (the compiler cache misses for a new path)"
        return 0
    fi
    mkdir -p "$pin/main" "$pin/shared"
    echo "ci: the clone at $here runs as $pin/main (a private mount namespace)"
    exec env ZEROCAM_CI_PINNED=1 unshare --mount --propagation private bash -c '
        set -e
        pin=$1 here=$2
        shift 2
        mount --bind "$here" "$pin/main"
        [[ -d $here/../shared ]] && mount --bind "$here/../shared" "$pin/shared"
        cd "$pin/main"
        exec bash .ci/run "$@"' ci-pin "$pin" "$here" "$@"
}

ci_names=() ci_secs=() ci_whys=()
ci_current=""
ci_start=$SECONDS

# ci_step NAME WHY FUNCTION: run FUNCTION as one timed step. WHY is the
# table's "what it proves" column (docs/testing.md keeps the same table).
ci_step() {
    local name=$1 why=$2 t=$SECONDS
    shift 2
    ci_current=$name
    printf '\n=== %s (%s)\n' "$name" "$(date +%T)"
    "$@"
    ci_names+=("$name") ci_secs+=($((SECONDS - t))) ci_whys+=("$why")
    printf '=== %s: %d s\n' "$name" $((SECONDS - t))
    ci_current=""
}

# The disk's use on the filesystems CI writes (the clone, the caches), sampled
# every 5 s by a background loop: the peak above the start is what a run needs.
ci_disk_used() { df -P -B1M "$@" 2>/dev/null | awk 'NR > 1 && !seen[$1]++ { s += $3 } END { print s + 0 }'; }
ci_disk_start() {
    ci_disk_dirs=("$PWD" "$HOME")
    ci_disk_base=$(ci_disk_used "${ci_disk_dirs[@]}")
    ci_disk_peak_file=$(mktemp)
    echo "$ci_disk_base" >"$ci_disk_peak_file"
    (
        while sleep 5; do
            now=$(ci_disk_used "${ci_disk_dirs[@]}") || continue
            peak=$(cat "$ci_disk_peak_file")
            ((now > peak)) && echo "$now" >"$ci_disk_peak_file"
        done
    ) &
    ci_disk_pid=$!
}

ci_summary() {
    local rc=$? i total=$((SECONDS - ci_start))
    [[ -n ${ci_disk_pid:-} ]] && kill "$ci_disk_pid" 2>/dev/null
    for i in "${!ci_jobs[@]}"; do
        echo "ci: stopping the background job $i"
        kill -- "-${ci_jobs[$i]}" 2>/dev/null || true
    done
    printf '\n=== summary: %d s in all (%s)\n' "$total" "$(date +%T)"
    printf '| step | seconds | what it proves |\n| --- | ---: | --- |\n'
    for i in "${!ci_names[@]}"; do
        printf '| %s | %d | %s |\n' "${ci_names[$i]}" "${ci_secs[$i]}" "${ci_whys[$i]}"
    done
    [[ -n $ci_current ]] && printf '| %s | FAILED (exit %d) | |\n' "$ci_current" "$rc"
    if [[ -n ${ci_disk_peak_file:-} ]]; then
        local peak
        peak=$(cat "$ci_disk_peak_file")
        printf 'disk: peak %d MB above the start (%d MB used at the start)\n' \
            $((peak - ci_disk_base)) "$ci_disk_base"
        rm -f "$ci_disk_peak_file"
    fi
    if [[ -n ${RUSTC_WRAPPER:-} ]]; then
        sccache --show-stats 2>/dev/null | grep -E '^(Compile requests|Cache hits|Cache misses|Non-cacheable calls|Cache size|Max cache size)' | sed 's/^/sccache: /' || true
        sccache --stop-server >/dev/null 2>&1 || true
    fi
    return "$rc"
}

# The compiler cache: sccache, a local directory outside the clone, bounded in
# size (least recently used entries go first). Every rustc call of every step
# goes through it; its key is the compiler, every argument, every source and
# dependency file's content and the CARGO_* environment, so a changed source
# is always compiled again. docs/testing.md says why sccache and what it does
# not cache.
ci_sccache() {
    command -v sccache >/dev/null || {
        echo "ci: sccache is missing (bash tests/setup --ci installs it)" >&2
        return 1
    }
    export SCCACHE_DIR=${ZEROCAM_SCCACHE_DIR:-$HOME/.cache/zerocam/sccache}
    export SCCACHE_CACHE_SIZE=${ZEROCAM_SCCACHE_SIZE:-10G}
    # A socket of its own, not TCP port 4226: the chroots' builds (the fresh
    # root, the libcamera root) start servers of their own and must never
    # reach this one, which sees the host's files.
    export SCCACHE_SERVER_UDS=$HOME/.cache/zerocam/sccache.sock
    export SCCACHE_IDLE_TIMEOUT=0 RUSTC_WRAPPER=sccache
    mkdir -p "$SCCACHE_DIR"
    sccache --stop-server >/dev/null 2>&1 || true
    sccache --start-server >/dev/null
    sccache --zero-stats >/dev/null
    echo "ci: sccache $(sccache --version | cut -d' ' -f2) at $SCCACHE_DIR (at most $SCCACHE_CACHE_SIZE), $(du -sh "$SCCACHE_DIR" | cut -f1) now"
}

# Work that needs no compiler and no other step's output (the labs' kernels
# and roots, the fresh root's base: downloads and package scripts, most of it
# one core under qemu-user) runs beside the builds: ci_background starts it
# with its output in target/ci-logs/NAME.log; ci_wait, in the step that needs
# it, waits, prints that log and fails when the job failed. With the caches
# ready the labs and the base are checks of seconds; tests/setup-check still
# installs its groups in clean roots (about 270 s, beside the builds).
declare -A ci_jobs=() ci_job_start=()
ci_background() {
    local name=$1
    shift
    mkdir -p target/ci-logs
    # A session of its own, so a failed run can stop all of it (a VM included).
    setsid "$@" </dev/null >"target/ci-logs/$name.log" 2>&1 &
    ci_jobs[$name]=$! ci_job_start[$name]=$SECONDS
    echo "ci: started $name in the background (target/ci-logs/$name.log)"
}
ci_wait() {
    local name=$1 t=$SECONDS rc=0
    [[ -n ${ci_jobs[$name]:-} ]] || { echo "ci: no background job $name" >&2; return 1; }
    wait "${ci_jobs[$name]}" || rc=$?
    unset "ci_jobs[$name]"
    sed "s/^/[$name] /" "target/ci-logs/$name.log"
    echo "ci: $name: ran $((SECONDS - ci_job_start[$name])) s in all, waited $((SECONDS - t)) s for it (exit $rc)"
    return "$rc"
}
