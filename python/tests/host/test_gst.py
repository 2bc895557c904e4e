"""`Camera("gst:PIPELINE")`: GStreamer pipelines as cameras (the wheel built
with the cargo feature `gstreamer`: python/ci.sh builds one and runs the
tests marked `gstreamer` with it; the published wheels leave it out)."""

import numpy as np
import pytest

import zerocam
from zerocam import Camera

pytestmark = pytest.mark.gstreamer

WHITE = "gst:videotestsrc pattern=white num-buffers=5 ! video/x-raw,format=NV12,width=64,height=48,colorimetry=bt601"


def test_a_pipeline_is_a_camera_and_its_end_ends_the_iteration():
    with Camera(WHITE) as cam:
        frames = 0
        for frame in cam:
            with frame:
                y, uv = frame.planes
                assert y.shape == (48, 64) and uv.shape == (24, 64)
                assert (np.asarray(y) == 235).all() and (np.asarray(uv) == 128).all()
            frames += 1
        assert frames == 5
        assert cam.stats()["frames"] == 5


def test_a_bad_pipeline_is_an_invalid_argument_naming_the_element():
    with pytest.raises(zerocam.InvalidArgument, match='no element "no_such_element_zc"'):
        Camera("gst:no_such_element_zc")
