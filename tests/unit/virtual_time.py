"""A tiny virtual-time event loop for tests of timeouts (neither ``looptime`` nor ``time-machine`` is a dependency).

``VirtualTimeLoop`` is a ``SelectorEventLoop`` whose ``time()`` is a virtual clock. Its selector never blocks:
when no callback is ready and no file descriptor is readable, the clock jumps to the next scheduled timer (the
``timeout`` the loop asks the selector to wait). Timers, ``asyncio.sleep``, ``asyncio.timeout`` and
``asyncio.timeout_at`` therefore fire in order and at exactly their virtual time, with no real waiting; a test
asserts on ``loop.time()`` without depending on the speed of the machine. When nothing is ready and no timer is
scheduled the program can never go on: the selector raises :class:`VirtualTimeDeadlock` instead of hanging.

:func:`run_in_virtual_time` runs a coroutine on such a loop and also points the sharing layer's monotonic clock
at the virtual one (tests of the sharing layer), so that any deadline its modules compute, whichever clock they
read, is virtual too.
"""

from __future__ import annotations

import asyncio
import selectors
import time
import types
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

import pytest

from mybinlog.sharing import _client, _consumer, _dispatcher

T = TypeVar("T")


class VirtualTimeDeadlock(RuntimeError):
    """Nothing is ready and no timer is scheduled: the coroutine under test waits for something that never comes."""


class VirtualClock:
    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class _VirtualSelector(selectors.BaseSelector):
    """A real selector polled without blocking; a wait for ``timeout`` seconds advances the virtual clock."""

    def __init__(self, clock: VirtualClock) -> None:
        self._real = selectors.DefaultSelector()
        self._clock = clock

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise VirtualTimeDeadlock("nothing is ready and no timer is scheduled: the test can never go on")
        self._clock.now += timeout
        return []

    def close(self) -> None:
        self._real.close()

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.get_key(fileobj)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._real.get_map()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock: VirtualClock | None = None) -> None:
        self.clock = clock or VirtualClock()
        super().__init__(_VirtualSelector(self.clock))

    def time(self) -> float:
        return self.clock.now


def run_in_virtual_time(
    monkeypatch: pytest.MonkeyPatch, main: Callable[[], Coroutine[Any, Any, T]], *, start: float = 0.0
) -> T:
    """``main()`` run to completion on a :class:`VirtualTimeLoop` whose clock starts at ``start``."""
    clock = VirtualClock(start)
    virtual = types.SimpleNamespace(monotonic=clock, time=time.time)
    for module in (_consumer, _dispatcher, _client):  # the modules of the sharing layer that read a clock
        monkeypatch.setattr(module, "time", virtual)
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(clock)) as runner:
        return runner.run(main())
