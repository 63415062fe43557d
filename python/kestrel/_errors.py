"""Kestrel's exceptions. Each also subclasses the Python exception a caller
would catch for that kind of failure, so code written for ONNX Runtime or for
plain Python (``except FileNotFoundError``, ``except ValueError``) catches it,
and ``except kestrel.KestrelError`` catches them all."""


class KestrelError(RuntimeError):
    """A failure reported by Kestrel; the message names the input, node, op or shape."""


class Fail(KestrelError):
    """A kernel's or the device's failure during a run."""


class InvalidArgument(KestrelError, ValueError):
    """An unknown, missing or mistyped input or output name, or a bad option."""


class NoSuchFile(KestrelError, FileNotFoundError):
    """A model or external-data file that does not exist."""


class InvalidModel(KestrelError, ValueError):
    """Not a model Kestrel can read: protobuf, IR version or graph."""


class NotImplementedByKestrel(KestrelError, NotImplementedError):
    """A valid model using an op, opset or element type Kestrel does not run."""


class Cancelled(KestrelError):
    """A run stopped by its caller: RunOptions.terminate or a timeout."""


class OutOfMemory(KestrelError, MemoryError):
    """The host could not allocate."""
