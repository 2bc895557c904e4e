"""The Python face zerocam follows: the snippets of edgefirst-tensor's README
(the reference, /work/shared/reference/ in the workspace), as a user porting
them would paste them one after the other into one script. Each is verbatim
but for the names that are that project's own: the import
(`from edgefirst.tensor import ...` → `from zerocam import ...`), and in the
capsule example the protocol's name (`__edgefirst_tensor__` →
`__zerocam_tensor__`) and a sibling package's class (`edgefirst.image.Tensor`
→ `zerocam.Tensor`). Lines that are not the reference's (what `obj` is) are in
SETUP, apart.

Used by tests/host/test_quick_start.py and tests/lab/test_lab_quick_start.py.
"""

# The quick start: allocate, fill through a mapped view, print.
QUICK_START = """\
import numpy as np
from zerocam import Tensor, PixelFormat

# Allocate once; a real pipeline reuses the tensor every frame.
# mem=None selects the best backend available on the platform.
tensor = Tensor.image(1920, 1080, PixelFormat.Rgb, None, "readwrite")

with tensor.map() as view:
    frame = np.asarray(view)  # shape, dtype and strides all carried
    frame[:] = 128

print(tensor.shape, tensor.format, tensor.dtype)
"""

# The line of QUICK_START that allocates (the lab puts a frame's plane there).
ALLOCATION = 'tensor = Tensor.image(1920, 1080, PixelFormat.Rgb, None, "readwrite")\n'

# The next snippet: a read map (the first block's `frame` is still alive
# while this `np.asarray` runs: Python rebinds the name after it returns).
READ_MAP = """\
with tensor.map("read") as view:
    frame = np.asarray(view)  # read-only view, not writable
"""

# "Handing memory to an external runtime".
PIN_HOST = """\
pin = tensor.pin_host("readwrite")
print(hex(pin.ptr), pin.len, pin.alignment)

# pin.ptr stays valid for the lifetime of `pin` — across re-maps and across
# ImageProcessor.convert() calls — so an external runtime can hold on to it.
pin.release()
"""

# Not the reference's: `obj` is a tensor of another extension module (a
# class of its own with the capsule protocol, as a sibling module's Tensor is).
SETUP = """\
import zerocam


class SiblingTensor:
    def __init__(self, tensor):
        self._tensor = tensor

    def __zerocam_tensor__(self):
        return self._tensor.__zerocam_tensor__()


obj = SiblingTensor(tensor)
"""

# "Interoperability": test for the protocol, not the class.
CAPSULE = """\
# CORRECT — works regardless of which zerocam.* package produced obj
if hasattr(obj, "__zerocam_tensor__"):
    ...

# WRONG — always False for a tensor from a sibling package
if isinstance(obj, zerocam.Tensor):
    ...
"""

# All of it, in the order of the reference.
SCRIPT = QUICK_START + "\n" + READ_MAP + "\n" + PIN_HOST + "\n" + SETUP + "\n" + CAPSULE
