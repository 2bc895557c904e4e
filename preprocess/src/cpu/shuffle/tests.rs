use super::*;

/// Every stream kind of `source::layout`, at sizes that fit one load a
/// block, two, or neither, against the scalar reference, bit for bit, on
/// each vector copy the CPU has.
#[test]
fn the_vector_copies_match_the_scalar_columns() {
    let mut planned = [0; 3];
    for (t, c, d) in Stream::KINDS {
        let stream = Stream::kind(t, c, d);
        for (plane, outputs) in [
            (720, 640),
            (360, 640),
            (1280, 640),
            (700, 203),
            (40, 41),
            (1280, 192),
        ] {
            let mut columns = Columns::default();
            columns.fill((3.0, plane as f64 - 5.0), outputs, (plane, plane), (t, 0));
            let mut s = Shuffles::default();
            s.plan(&stream, &columns);
            planned[s.loads] += 1;
            if !s.ready() {
                continue;
            }
            let window: Vec<u8> = (0..plane * t + 64)
                .map(|i| (i * 7919 % 251) as u8)
                .collect();
            let n = outputs;
            let what = format!(
                "texel {t}, {c} samples {d} apart, {plane} → {outputs}, {} loads",
                s.loads
            );
            let mut want = vec![0u16; n * c];
            scalar(&s, &window, &columns, &mut want, n);
            for k in 0..c {
                let row = &mut want[k * n..(k + 1) * n];
                scalar_columns(&s, &window, &columns, k, s.blocks * LANES..n, row);
            }
            let mut got = vec![1u16; n * c];
            s.resample(&window, &columns, &mut got);
            assert_eq!(got, want, "{what}");
            // The 128-bit copy too, where the CPU would take AVX2's.
            #[cfg(target_arch = "x86_64")]
            if is_x86_feature_detected!("ssse3") {
                let mut got = want.clone();
                for k in 0..c {
                    got[k * n..k * n + s.blocks * LANES].fill(1);
                }
                // SAFETY: the CPU has SSSE3, checked just above.
                unsafe { x86::ssse3(&s, &window, &columns, &mut got, n) };
                assert_eq!(got, want, "SSSE3: {what}");
            }
        }
    }
    assert!(
        planned[1] >= 8 && planned[2] >= 4,
        "by loads a block: {planned:?}"
    );
}

/// The camera formats of a 720 → 640 crop: NV12's planes take one load a
/// block, YUYV's and RGB's two; RGBA keeps the gather.
#[test]
fn each_camera_format_of_a_720_crop_takes_the_fewest_loads_that_fit() {
    for ((t, c, d), plane, loads) in [
        ((1, 1, 1), 720, 1), // NV12 luma
        ((2, 2, 1), 360, 1), // NV12 chroma pairs
        ((2, 1, 1), 720, 2), // YUYV luma
        ((4, 2, 2), 360, 2), // YUYV chroma
        ((3, 3, 1), 720, 2), // RGB
        ((4, 3, 1), 720, 0), // RGBA
    ] {
        let stream = Stream::kind(t, c, d);
        let mut columns = Columns::default();
        columns.fill((0.0, plane as f64), 640, (plane, plane), (t, 0));
        let mut s = Shuffles::default();
        s.plan(&stream, &columns);
        assert_eq!(
            s.loads, loads,
            "texel {t}, {c} samples {d} apart, {plane} → 640"
        );
    }
}
