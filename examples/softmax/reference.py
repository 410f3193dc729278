# Plain-torch reference of the softmax example: softmax in fp64 (no Triton).


def softmax_reference(x, dim=-1):
    """softmax(x, dim) computed in fp64 (subtracting the row maximum); returns fp64."""
    x = x.double()
    shifted = x - x.amax(dim=dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)
