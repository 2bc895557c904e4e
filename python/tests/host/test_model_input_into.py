"""zerocam.Preprocessor on threads, into the caller's array, and over several
cameras: the same bits on any thread count; `out=` writes a numpy array's
own memory (its address asserted) without the ring; a batch reads each
camera with its own crop; bad arrays and thread counts raise naming what
was wrong."""

import numpy as np
import pytest

import zerocam
from zerocam import Camera, InvalidArgument, ModelInput, Preprocessor

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def frame_tensor(w, h, seed):
    """A `w`x`h` NV12 tensor of a seeded pattern."""
    t = zerocam.Tensor.image(w, h, zerocam.PixelFormat.Nv12, mem="mem")
    rng = np.random.default_rng(seed)
    with t.map() as v:
        a = np.asarray(v)
        a[:] = rng.integers(16, 236, a.shape, dtype=np.uint8)
    return t


def values(t):
    with t.map("read") as v:
        return np.array(v)


def address(a):
    return a.__array_interface__["data"][0]


def test_threads_are_chosen_and_give_the_same_bits():
    mi = ModelInput(96, 64, mean=MEAN, std=STD, fit="letterbox")
    src = frame_tensor(160, 90, 1)
    one = Preprocessor(mi, device="cpu", threads=1)
    two = Preprocessor(mi, device="cpu", threads=2)
    assert (one.threads, two.threads) == (1, 2)
    assert Preprocessor(mi, device="cpu", threads=64).threads == 8, "at most 8"
    assert Preprocessor(mi, device="cpu").threads >= 1
    assert values(one(src)).tobytes() == values(two(src)).tobytes()
    with pytest.raises(InvalidArgument, match="threads 0: give at least 1"):
        Preprocessor(mi, device="cpu", threads=0)


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_out_writes_the_callers_array_in_place(device):
    mi = ModelInput(64, 48, mean=MEAN, std=STD)
    pre = Preprocessor(mi, device=device)
    src = frame_tensor(128, 72, 2)
    arr = np.full(mi.shape, np.nan, dtype=np.float32)
    t = zerocam.Tensor.from_array(arr)
    got = pre(src, crop=(16, 0, 96, 72), out=t)
    assert got is t, "the caller's tensor comes back"
    with t.map("read") as v:
        assert v.ptr == address(arr), "the array's own memory, not a copy"
    assert np.isfinite(arr).all(), "every element written"
    assert pre.stats()["tensors_allocated"] == 0, "the ring is not used"
    ring = pre(src, crop=(16, 0, 96, 72))
    assert values(ring).tobytes() == arr.tobytes()
    # A uint8 NHWC input into a uint8 array, as a quantized model takes it.
    q = ModelInput(64, 48, dtype="uint8", layout="nhwc")
    buf = np.zeros(q.shape, dtype=np.uint8)
    Preprocessor(q, device=device)(src, out=zerocam.Tensor.from_array(buf))
    assert buf.any()


def test_out_and_from_array_refuse_what_they_cannot_write():
    mi = ModelInput(64, 48, mean=MEAN, std=STD)
    pre = Preprocessor(mi, device="cpu")
    src = frame_tensor(64, 48, 3)
    ro = np.zeros(mi.shape, dtype=np.float32)
    ro.setflags(write=False)
    with pytest.raises(InvalidArgument, match="read-only"):
        zerocam.Tensor.from_array(ro)
    with pytest.raises(InvalidArgument, match="not C-contiguous"):
        zerocam.Tensor.from_array(np.zeros((1, 3, 48, 128), dtype=np.float32)[..., ::2])
    with pytest.raises(InvalidArgument, match="not a zerocam dtype"):
        zerocam.Tensor.from_array(np.zeros(4, dtype=np.complex64))
    with pytest.raises(InvalidArgument, match="not a numpy array"):
        zerocam.Tensor.from_array(b"bytes")

    class Forged:  # an interface naming memory it does not own
        __array_interface__ = {"shape": (4,), "typestr": "|u1", "data": (8, False), "version": 3}

    with pytest.raises(InvalidArgument, match="not a numpy array"):
        zerocam.Tensor.from_array(Forged())
    wrong = np.zeros((1, 3, 64, 48), dtype=np.float32)
    with pytest.raises(InvalidArgument, match=r"\[1, 3, 64, 48\]"):
        pre(src, out=zerocam.Tensor.from_array(wrong))
    assert not wrong.any(), "nothing written into a refused destination"


def test_a_batch_reads_each_camera_with_its_own_crop():
    one = ModelInput(48, 48, dtype="uint8", layout="nhwc", fit="letterbox")
    four = ModelInput(48, 48, dtype="uint8", layout="nhwc", fit="letterbox", batch=4)
    cams = [frame_tensor(128, 72, 10 + k) for k in range(4)]
    crops = [(0, 0, 64, 72), None, (32, 8, 64, 48), (64, 0, 64, 64)]
    batch = Preprocessor(four, device="cpu", threads=2)
    alone = Preprocessor(one, device="cpu", ring=1)
    out = values(batch(cams, crop=crops))
    for k, (cam, crop) in enumerate(zip(cams, crops)):
        assert out[k].tobytes() == values(alone(cam, crop=crop)).tobytes(), f"camera {k}"
        assert batch.placements[k].offset == alone.placement.offset
    with pytest.raises(InvalidArgument, match="a list of 2 crops for 4 source"):
        batch(cams, crop=[None, None])


def test_pattern_frames_into_an_array():
    mi = ModelInput(64, 64, mean=MEAN, std=STD)
    pre = Preprocessor(mi, device="cpu", threads=2)
    arr = np.zeros(mi.shape, dtype=np.float32)
    t = zerocam.Tensor.from_array(arr)
    with Camera.pattern("NV12", (128, 72)) as cam:
        for _ in range(3):
            with cam.read() as frame:
                pre(frame, out=t)
                want = values(pre(frame))
            assert arr.tobytes() == want.tobytes()
