"""``await`` on :class:`kvikio.IOFuture`: the IO's end is handed to the event loop by a waiter
thread of the native module (``loop.call_soon_threadsafe``), so the loop neither blocks nor
polls nor goes through asyncio's default executor."""

from __future__ import annotations

import asyncio
import atexit
from typing import Any, Generator

from kvikio import _lib


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():  # the awaiting coroutine may have been cancelled
        fut.set_result(None)


async def wait(future: Any) -> int:
    """The bytes moved by ``future`` (what ``get()`` returns, or its error), awaited."""
    if not future.done():
        loop = asyncio.get_running_loop()
        ready = loop.create_future()

        def callback() -> None:  # on a waiter thread, with the GIL
            try:
                loop.call_soon_threadsafe(_wake, ready)
            except RuntimeError:  # the loop was closed meanwhile: nobody waits any more
                pass

        future._notify_when_done(callback)
        await ready
    return future.get()


def await_future(future: Any) -> Generator[Any, None, int]:
    """``IOFuture.__await__``."""
    return wait(future).__await__()


atexit.register(_lib._stop_future_waiters)
