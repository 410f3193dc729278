# Plain-torch reference of the matmul example (no Triton): the product in fp64, and the error measure
# the tests use.


def matmul_reference(a, b):
    """a @ b in fp64 (fp8 inputs are exact in fp64)."""
    return a.double() @ b.double()


def relative_error(c, expected):
    """||c - expected|| / ||expected|| (Frobenius), in fp64."""
    c, expected = c.double(), expected.double()
    return ((c - expected).norm() / expected.norm().clamp(min=1e-30)).item()
