# Plain-torch reference of the layer norm example: the forward pass in fp64 (no Triton).
import torch


def layer_norm_reference(x, weight=None, bias=None, eps=1e-5):
    """(y, mean, rstd) in fp64: normalization over the last dimension with the biased variance,
    rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * weight + bias."""
    x = x.double()
    mean = x.mean(dim=-1)
    variance = ((x - mean[..., None]) ** 2).mean(dim=-1)
    rstd = 1.0 / torch.sqrt(variance + eps)
    y = (x - mean[..., None]) * rstd[..., None]
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y, mean, rstd
