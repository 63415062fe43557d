"""Kestrel from Python: a ctypes binding over the C API (src/api/kestrel.h).
It needs numpy and libkestrel.so (found through $KESTREL_LIB, then
build/libkestrel.so beside this folder, then the loader's search path).

    import kestrel
    s = kestrel.Session("model.onnx", backend="cpu", threads=4)
    outputs = s.run({"images": pixels})        # numpy arrays, model order

For a loop over the same input arrays, s.prepare(feeds) returns a callable
that skips rebuilding the C views on every call. Arrays that are already
C-contiguous are read anew on each call (their contents may change between
calls); others are copied once, when prepared. A session may run on
several threads at once; a prepared callable, one thread at a time.
"""
import ctypes
import math
import os

import numpy as np

# ONNX TensorProto.DataType codes (KESTREL_FLOAT32 ...) <-> numpy; bfloat16
# outputs come back as their raw uint16 bits.
_NUMPY_OF = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
             9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64, 16: np.uint16}
_CODE_OF = {np.dtype(t): c for c, t in _NUMPY_OF.items() if c != 16}
_NUMPY_DTYPE = {c: np.dtype(t) for c, t in _NUMPY_OF.items()}


class KestrelError(RuntimeError):
    """A failure reported by Kestrel; the message names the input, node, op or shape."""


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


class _Options(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_char_p), ("precision", ctypes.c_char_p), ("threads", ctypes.c_int32)]


def _load_library():
    here = os.path.dirname(os.path.abspath(__file__))
    forced = os.environ.get("KESTREL_LIB")
    if forced and not os.path.exists(forced):
        raise KestrelError(f"KESTREL_LIB is {forced}, which does not exist")
    built = os.path.join(here, "..", "build", "libkestrel.so")
    lib = ctypes.CDLL(forced or (built if os.path.exists(built) else "libkestrel.so"))
    P, I32, S = ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p
    for name, res, args in [
        ("kestrel_last_error", S, []),
        ("kestrel_session_load", P, [S, ctypes.POINTER(_Options)]),
        ("kestrel_session_free", None, [P]),
        ("kestrel_session_input_count", I32, [P]),
        ("kestrel_session_input_name", S, [P, I32]),
        ("kestrel_session_output_count", I32, [P]),
        ("kestrel_session_output_name", S, [P, I32]),
        ("kestrel_session_backend", S, [P]),
        ("kestrel_session_run", P, [P, ctypes.c_size_t, ctypes.POINTER(S), ctypes.POINTER(_Tensor)]),
        ("kestrel_outputs_count", I32, [P]),
        ("kestrel_outputs_get", I32, [P, I32, ctypes.POINTER(_Tensor)]),
        ("kestrel_outputs_get_all", I32, [P, ctypes.POINTER(_Tensor), I32]),
        ("kestrel_outputs_free", None, [P]),
    ]:
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


_lib = None


def _library():
    global _lib
    if _lib is None:
        _lib = _load_library()
    return _lib


def _error():
    return KestrelError(_library().kestrel_last_error().decode())


class Session:
    def __init__(self, path, backend="auto", precision="auto", threads=0):
        lib = _library()
        opts = _Options(backend.encode(), precision.encode(), threads)
        self._handle = lib.kestrel_session_load(os.fsencode(path), ctypes.byref(opts))
        if not self._handle:
            raise _error()
        self.inputs = [lib.kestrel_session_input_name(self._handle, i).decode()
                       for i in range(lib.kestrel_session_input_count(self._handle))]
        self.outputs = [lib.kestrel_session_output_name(self._handle, i).decode()
                        for i in range(lib.kestrel_session_output_count(self._handle))]
        self.backend = lib.kestrel_session_backend(self._handle).decode()

    def close(self):
        if getattr(self, "_handle", None):
            _library().kestrel_session_free(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def prepare(self, feeds):
        """A callable that runs with these arrays (read on each call) and returns the outputs."""
        arrays = {}
        for name, value in feeds.items():
            a = np.require(value, requirements="C")  # (ascontiguousarray would make a scalar 1-D)
            if a.dtype not in _CODE_OF:
                raise KestrelError(f"input '{name}': numpy dtype {a.dtype} has no Kestrel element type")
            arrays[name] = a
        n = len(arrays)
        names = (ctypes.c_char_p * n)(*[k.encode() for k in arrays])
        shapes = [(ctypes.c_int64 * max(a.ndim, 1))(*a.shape) for a in arrays.values()]
        tensors = (_Tensor * n)(*[_Tensor(_CODE_OF[a.dtype], a.ndim, s, a.ctypes.data)
                                  for a, s in zip(arrays.values(), shapes)])
        lib, handle = _library(), self._handle
        run_c, get_all, free = lib.kestrel_session_run, lib.kestrel_outputs_get_all, lib.kestrel_outputs_free
        capacity = len(self.outputs)
        views = (_Tensor * max(capacity, 1))()

        def run(_keep=(arrays, shapes, self)):  # (the C views point into these; the session outlives the callable)
            out = run_c(handle, n, names, tensors)
            if not out:
                raise _error()
            try:
                results = []
                for i in range(min(get_all(out, views, capacity), capacity)):
                    t = views[i]
                    dtype = _NUMPY_DTYPE[t.dtype]
                    shape = t.shape[:t.rank]
                    nbytes = dtype.itemsize * math.prod(shape)
                    raw = (ctypes.c_char * nbytes).from_address(t.data) if nbytes else b""
                    results.append(np.frombuffer(raw, dtype).reshape(shape).copy())  # (copied: Kestrel frees its own)
                return results
            finally:
                free(out)

        return run

    def run(self, feeds):
        """Runs with every model input given by name; returns the outputs in model order."""
        return self.prepare(feeds)()
