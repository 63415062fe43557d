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

A run can be stopped: s.run(feeds, timeout_ms=500) fails once half a second
has passed, and s.run(feeds, cancel=token) fails soon after another thread
calls token.cancel() (token = kestrel.CancelToken()); both raise
KestrelError("run cancelled ..."). Loop and Scan nodes may each run at most
max_loop_iterations iterations per run (Session(..., max_loop_iterations=N);
1,000,000 unless given, 0: no cap). After s.close(), runs raise KestrelError;
runs already under way finish first, then the session is freed.
"""
import ctypes
import math
import operator
import os
import threading

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


class _Limits(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("max_loop_iterations", ctypes.c_int64),
                ("device_memory_mb", ctypes.c_int64), ("device_wait_s", ctypes.c_double)]


class _RunOptions(ctypes.Structure):
    _fields_ = [("cancel", ctypes.c_void_p), ("timeout_ms", ctypes.c_double)]


def _whole_number(name, value, bits):
    """value as an int that fits a C integer of `bits` bits (ctypes would silently wrap it)."""
    try:
        value = operator.index(value)  # (ints, numpy integers)
    except TypeError:
        raise KestrelError(f"{name} must be a whole number, got {value!r}") from None
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise KestrelError(f"{name} is out of range: {value}")
    return value


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
        ("kestrel_session_load_with_limits", P, [S, ctypes.POINTER(_Options), ctypes.POINTER(_Limits)]),
        ("kestrel_session_free", None, [P]),
        ("kestrel_session_input_count", I32, [P]),
        ("kestrel_session_input_name", S, [P, I32]),
        ("kestrel_session_output_count", I32, [P]),
        ("kestrel_session_output_name", S, [P, I32]),
        ("kestrel_session_backend", S, [P]),
        ("kestrel_session_run", P, [P, ctypes.c_size_t, ctypes.POINTER(S), ctypes.POINTER(_Tensor)]),
        ("kestrel_session_run_with", P, [P, ctypes.c_size_t, ctypes.POINTER(S), ctypes.POINTER(_Tensor),
                                         ctypes.POINTER(_RunOptions)]),
        ("kestrel_cancel_new", P, []),
        ("kestrel_cancel_request", None, [P]),
        ("kestrel_cancel_free", None, [P]),
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


class CancelToken:
    """Cancels the runs it is given to (run(..., cancel=token)) when cancel() is
    called, from any thread. It stays cancelled: use a new one for new runs."""

    def __init__(self):
        self._handle = _library().kestrel_cancel_new()
        if not self._handle:
            raise _error()

    def cancel(self):
        _library().kestrel_cancel_request(self._handle)

    def __del__(self):  # (a run holds a reference to its token until it returns)
        if getattr(self, "_handle", None):
            _library().kestrel_cancel_free(self._handle)
            self._handle = None


def _run_options(timeout_ms, cancel):
    if timeout_ms is None and cancel is None:
        return None
    if cancel is not None and not isinstance(cancel, CancelToken):
        raise KestrelError(f"cancel must be a kestrel.CancelToken, got {type(cancel).__name__}")
    timeout = 0.0 if timeout_ms is None else float(timeout_ms)
    if not timeout >= 0:  # (also refuses NaN)
        raise KestrelError(f"timeout_ms must be 0 (none) or more, got {timeout_ms!r}")
    return ctypes.byref(_RunOptions(cancel._handle if cancel is not None else None, timeout))


class Session:
    def __init__(self, path, backend="auto", precision="auto", threads=0, max_loop_iterations=None,
                 device_memory_mb=0, device_wait_s=0):
        # close() may come while other threads run: the handle is freed by
        # whichever of close() and the last run in flight comes last.
        self._lock = threading.Lock()
        self._handle = None
        self._in_flight = 0
        self._closing = False
        lib = _library()
        opts = _Options(backend.encode(), precision.encode(), _whole_number("threads", threads, 32))
        # max_loop_iterations: None keeps the default cap, 0 lifts it (-1 in kestrel_limits).
        cap = 0 if max_loop_iterations is None else _whole_number("max_loop_iterations", max_loop_iterations, 64)
        if cap < 0:
            raise KestrelError(f"max_loop_iterations must be 0 (no cap) or more, got {max_loop_iterations!r}")
        if max_loop_iterations is not None and cap == 0:
            cap = -1
        if not isinstance(device_wait_s, (int, float)) or device_wait_s < 0:
            raise KestrelError(f"device_wait_s must be 0 (default) or more seconds, got {device_wait_s!r}")
        limits = _Limits(ctypes.sizeof(_Limits), cap, _whole_number("device_memory_mb", device_memory_mb, 64),
                         float(device_wait_s))
        handle = lib.kestrel_session_load_with_limits(os.fsencode(path), ctypes.byref(opts), ctypes.byref(limits))
        if not handle:
            raise _error()
        self._handle = handle
        self.inputs = [lib.kestrel_session_input_name(handle, i).decode()
                       for i in range(lib.kestrel_session_input_count(handle))]
        self.outputs = [lib.kestrel_session_output_name(handle, i).decode()
                        for i in range(lib.kestrel_session_output_count(handle))]
        self.backend = lib.kestrel_session_backend(handle).decode()

    def close(self):
        """Frees the session once runs already under way have returned; later runs raise KestrelError."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # (__init__ failed before the session existed)
            return
        with lock:
            if self._closing:
                return
            self._closing = True
            handle = None
            if self._in_flight == 0:
                handle, self._handle = self._handle, None
        if handle:
            _library().kestrel_session_free(handle)

    def __del__(self):
        self.close()

    def _begin_run(self):
        with self._lock:
            if self._closing or not self._handle:
                raise KestrelError("session is closed")
            self._in_flight += 1
            return self._handle

    def _end_run(self):
        with self._lock:
            self._in_flight -= 1
            handle = None
            if self._closing and self._in_flight == 0:
                handle, self._handle = self._handle, None
        if handle:
            _library().kestrel_session_free(handle)

    def prepare(self, feeds):
        """A callable that runs with these arrays (read on each call) and returns the outputs.
        It takes the same timeout_ms and cancel keywords as run()."""
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
        lib = _library()
        run_c, get_all, free = lib.kestrel_session_run_with, lib.kestrel_outputs_get_all, lib.kestrel_outputs_free
        capacity = len(self.outputs)
        views = (_Tensor * max(capacity, 1))()

        def run(timeout_ms=None, cancel=None, _keep=(arrays, shapes, self)):
            # (The C views point into _keep's arrays; the session outlives the callable.)
            options = _run_options(timeout_ms, cancel)
            handle = self._begin_run()
            try:  # (the outputs are read and freed before the session may be)
                out = run_c(handle, n, names, tensors, options)
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
            finally:
                self._end_run()

        return run

    def run(self, feeds, timeout_ms=None, cancel=None):
        """Runs with every model input given by name; returns the outputs in model order.
        timeout_ms: fail once this has passed; cancel: a CancelToken another thread may cancel."""
        return self.prepare(feeds)(timeout_ms=timeout_ms, cancel=cancel)
