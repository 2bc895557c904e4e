"""zerocam.Recorder on the pattern source; the files read back by ffprobe
(a test requirement: install ffmpeg)."""

import json
import shutil
import subprocess

import pytest

import zerocam
from zerocam import Camera, Recorder


def ffprobe(path):
    exe = shutil.which("ffprobe")
    assert exe, "ffprobe is needed: install ffmpeg"
    out = subprocess.run(
        [exe, "-v", "error", "-count_frames", "-select_streams", "v:0",
         "-show_entries", "stream=codec_name,width,height,nb_read_frames,duration",
         "-of", "json", str(path)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)["streams"][0]


def test_thirty_pattern_frames_in_a_with_block_make_an_mp4_of_thirty_frames(tmp_path):
    path = tmp_path / "clip.mp4"
    with Camera.pattern("NV12", (320, 240), fps=30) as cam:
        with Recorder(str(path), encoder="software") as rec:
            assert "chosen at the first frame" in rec.encoder
            stamps = []
            for _ in range(30):
                frame = cam.read()
                stamps.append(frame.timestamp)
                rec.write(frame)
                assert frame.released, "write takes the frame's lease"
            assert "OpenH264" in rec.encoder
        assert rec.closed
        st = rec.stats
        assert st["frames"] == 30 and st["samples"] == 30 and st["finished"]
        assert st["copied_frames"] == 30  # NV12's chroma split, counted
        assert st["bytes"] == path.stat().st_size
    s = ffprobe(path)
    assert (s["codec_name"], s["width"], s["height"], int(s["nb_read_frames"])) == ("h264", 320, 240, 30)
    # Timed by the frames' own timestamps (the pattern paces at 30 fps; a
    # slow first write shows as a longer first frame): the last frame lasts
    # as long as the one before it.
    want = stamps[-1] - stamps[0] + (stamps[-1] - stamps[-2])
    assert abs(float(s["duration"]) - want) < 0.002
    assert abs(want - 1.0) < 0.3


def test_annex_b_and_close_is_idempotent(tmp_path):
    path = tmp_path / "clip.h264"
    rec = Recorder(path, bitrate=300_000, gop=5)
    with Camera.pattern("YUYV", (160, 120)) as cam:
        for _ in range(10):
            rec.write(cam.read())
    rec.close()
    rec.close()
    with pytest.raises(zerocam.Released):
        with Camera.pattern("YUYV", (160, 120)) as cam:
            rec.write(cam.read())
    s = ffprobe(path)
    assert (s["codec_name"], int(s["nb_read_frames"])) == ("h264", 10)


def test_refusals_are_typed_and_create_nothing(tmp_path):
    with pytest.raises(zerocam.InvalidArgument, match=r"\.mp4, \.h264, .* and \.fwht"):
        Recorder(tmp_path / "clip.avi")
    assert not (tmp_path / "clip.avi").exists()
    with pytest.raises(zerocam.InvalidArgument, match="hold h264, not mjpeg"):
        Recorder(tmp_path / "clip.mp4", codec="mjpeg")
    assert not (tmp_path / "clip.mp4").exists()
    with pytest.raises(zerocam.InvalidArgument, match="vp9"):
        Recorder(tmp_path / "clip.mp4", codec="vp9")
    with pytest.raises(zerocam.InvalidArgument, match="nvenc"):
        Recorder(tmp_path / "clip.mp4", encoder="nvenc")
    with pytest.raises(zerocam.InvalidArgument, match="bitrate"):
        Recorder(tmp_path / "clip.mp4", bitrate=0)
    with pytest.raises(zerocam.DeviceError) as e:
        Recorder(tmp_path / "no" / "dir" / "clip.mp4")
    assert e.value.errno == 2
    assert not (tmp_path / "clip.mp4").exists()


def test_a_frame_whose_tensor_is_mapped_is_refused_and_kept(tmp_path):
    with Camera.pattern("NV12", (64, 48)) as cam, Recorder(tmp_path / "c.mp4") as rec:
        frame = cam.read()
        with frame.tensor.map("read"):
            with pytest.raises(zerocam.MapConflict):
                rec.write(frame)
            assert not frame.released
        rec.write(frame)
        assert frame.released


def test_a_bare_stream_takes_its_codec_from_the_extension(tmp_path):
    # ``.mjpeg`` holds Motion JPEG: no codec given, every frame a JPEG.
    path = tmp_path / "clip.mjpeg"
    with Camera.pattern("NV12", (64, 48)) as cam, Recorder(path) as rec:
        for _ in range(5):
            rec.write(cam.read())
    data = path.read_bytes()
    assert data.count(b"\xff\xd8\xff") == 5
