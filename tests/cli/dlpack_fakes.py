"""Array producers for testing the generated module's DLPack paths without a GPU or torch: an object
with only __dlpack__ / __dlpack_device__ (old-style or versioned capsules), and a type carrying a
DLPack C exchange table (`__dlpack_c_exchange_api__`, what torch >= 2.10 provides). Both describe
made-up device addresses; they record what the consumer asked of them."""
import ctypes

K_DL_CPU, K_DL_CUDA = 1, 2
DTYPES = {"fp32": (2, 32), "fp16": (2, 16), "bf16": (4, 16), "fp64": (2, 64), "i32": (0, 32)}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
_CAPSULE_NAMES = {name: ctypes.create_string_buffer(name) for name in
                  (b"dltensor", b"dltensor_versioned", b"dlpack_exchange_api")}


def _capsule(address, name):
    return _capsule_new(address, ctypes.addressof(_CAPSULE_NAMES[name]), None)


def _fill(view, address, dtype, shape, device):
    code, bits = DTYPES[dtype]
    view._shape = (ctypes.c_int64 * len(shape))(*shape)  # kept alive with the view
    view.data = address
    view.device = DLDevice(*device)
    view.ndim = len(shape)
    view.dtype = DLDataType(code, bits, 1)
    view.shape = view._shape
    view.strides = None
    view.byte_offset = 0


class DLPackArray:
    """An array known only through __dlpack__ and __dlpack_device__. `versioned`: answers
    max_version with a "dltensor_versioned" capsule; otherwise its __dlpack__ takes no max_version
    (a pre-1.0 producer) and gives "dltensor". Records the `stream` it was asked to order before."""

    def __init__(self, address, dtype="fp32", shape=(1024,), device=(K_DL_CUDA, 0), versioned=True):
        self.device = device
        self.versioned = versioned
        self.streams = []
        if versioned:
            self._managed = DLManagedTensorVersioned()
            self._managed.version = DLPackVersion(1, 0)
        else:
            self._managed = DLManagedTensor()
        _fill(self._managed.dl_tensor, address, dtype, shape, device)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, **kwargs):
        if not self.versioned and kwargs:
            raise TypeError(f"__dlpack__() got unexpected keyword arguments {sorted(kwargs)}")
        self.streams.append(stream)
        name = b"dltensor_versioned" if self.versioned else b"dltensor"
        return _capsule(ctypes.addressof(self._managed), name)


_FROM_OBJECT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(DLTensor))
_CURRENT_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


class DLPackExchangeAPI(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("prev_api", ctypes.c_void_p), ("managed_tensor_allocator", ctypes.c_void_p),
                ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
                ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
                ("dltensor_from_py_object_no_sync", _FROM_OBJECT), ("current_work_stream", _CURRENT_STREAM)]


STREAM_QUERIES = []  # (device_type, device_id) of each current_work_stream call
CURRENT_STREAM = 0x5000


def _view_of(py_object, out):
    view = out.contents
    _fill(view, py_object.address, py_object.dtype, py_object.shape, py_object.device)
    py_object._shape_of_view = view._shape  # DLPack: valid until control returns to Python
    return 0


def _current_stream(device_type, device_id, out):
    STREAM_QUERIES.append((device_type, device_id))
    out[0] = CURRENT_STREAM
    return 0


_view_callback = _FROM_OBJECT(_view_of)
_stream_callback = _CURRENT_STREAM(_current_stream)
_API = DLPackExchangeAPI(DLPackVersion(1, 3), None, None, None, None, _view_callback, _stream_callback)


class ExchangeTensor:
    """A tensor type with a DLPack C exchange table, like torch.Tensor in torch >= 2.10."""
    __dlpack_c_exchange_api__ = _capsule(ctypes.addressof(_API), b"dlpack_exchange_api")

    def __init__(self, address, dtype="fp32", shape=(1024,), device=(K_DL_CUDA, 0)):
        self.address, self.dtype, self.shape, self.device = address, dtype, shape, device
