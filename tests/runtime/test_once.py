"""ep's cached_property (ep/common/runtime/once.py): no lock a fork could leave held, one value per instance."""
import os
import pathlib
import signal
import threading

import pytest

import ep
from ep.common.runtime.once import cached_property


class Slow:
    started, release = threading.Event(), threading.Event()

    @cached_property
    def value(self):
        """Blocks until released, as a first compile takes seconds."""
        Slow.started.set()
        Slow.release.wait(10)
        return object()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_fork_while_another_thread_computes_leaves_the_child_free():
    # functools.cached_property (3.11) held a lock shared by every instance while computing: the
    # child of a fork made then blocked forever on the property of any instance.
    worker = threading.Thread(target=lambda: Slow().value)
    worker.start()
    assert Slow.started.wait(10)
    pid = os.fork()
    if pid == 0:
        signal.alarm(5)  # a hang becomes SIGALRM
        Slow.release.set()  # the child's own event: its copy of the worker thread is gone
        Slow().value
        os._exit(0)
    Slow.release.set()
    worker.join()
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def test_every_thread_gets_the_value_stored_first():
    class Counted:
        made = []

        @cached_property
        def value(self):
            barrier.wait(5)  # both threads compute at once
            value = object()
            Counted.made.append(value)
            return value

    barrier = threading.Barrier(2)
    instance, got = Counted(), []
    threads = [threading.Thread(target=lambda: got.append(instance.value)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(Counted.made) == 2 and got[0] is got[1] is instance.value is instance.__dict__["value"]
    assert Counted.__dict__["value"].__doc__ is None and Slow.__dict__["value"].__doc__.startswith("Blocks")


def test_ep_uses_no_functools_cached_property():
    root = pathlib.Path(ep.__file__).parent
    users = [str(p.relative_to(root)) for p in root.rglob("*.py") if "@functools.cached_property" in p.read_text()]
    assert users == []
