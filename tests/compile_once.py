"""Processes of one test run (xdist workers, MPI ranks) take turns compiling a disk-cached Numba specialization."""
import fcntl
import hashlib
import os

# The run's lock directory, for the processes a test starts (MPI ranks).
ENVIRONMENT = "EP_TEST_COMPILE_LOCKS"


def compile_each_signature_once(directory: str) -> None:
    """Compile each disk-cached (function, signature) in one process at a time, the others loading its build.

    Without this, processes that need the same kernel at about the same time (two xdist workers, as
    tests of one kernel sit side by side and --dist load deals them out alternately; every rank of an
    MPI job) all miss the cache and all compile it: seconds of CPU each. Under a file lock per
    (function, signature) the others wait, and Numba's compile then finds the first's build in the
    disk cache and loads it. Functions without a disk cache compile per process anyway and take no
    lock. Numba's Dispatcher.compile is wrapped (its _cache and overloads are private), in the test
    run's processes only.
    """
    from numba.core import sigutils
    from numba.core.caching import NullCache
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.dispatcher import Dispatcher

    os.makedirs(directory, exist_ok=True)
    compile = Dispatcher.compile
    if getattr(compile, "directory", None) == directory:
        return
    held = set()  # the keys this process holds: a compile nested in its own (recursion) takes no lock again

    def compile_once(self, sig):
        args, _ = sigutils.normalize_signature(sig)
        if isinstance(self._cache, NullCache) or tuple(args) in self.overloads:
            return compile(self, sig)
        key = hashlib.sha256(f"{self.py_func.__module__}.{self.py_func.__qualname__}{tuple(args)}".encode()).hexdigest()
        # Numba's own lock first (its compile takes it anyway): a thread waiting here holds no file lock,
        # so a thread and a process cannot wait on each other's file locks (nested compiles follow calls).
        with global_compiler_lock:
            if key in held:
                return compile(self, sig)
            with open(os.path.join(directory, key[:32]), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                held.add(key)
                try:
                    return compile(self, sig)
                finally:
                    held.discard(key)

    compile_once.directory = directory
    Dispatcher.compile = compile_once


def join_run() -> None:
    """In a process a test started: share the run's locks, if the test named them (ENVIRONMENT)."""
    directory = os.environ.get(ENVIRONMENT)
    if directory:
        compile_each_signature_once(directory)
