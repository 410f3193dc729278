"""The bench file of the tuner tests: shapes over M; make_args is never called by the fake backend."""
KERNEL = "moe"
DIMS = ("M",)
SHAPES = [1, 16, 64, 256]


def make_args(shape, device):
    raise AssertionError("the fake backend makes no arguments")
