"""Jobs run at once, each in a thread, their results streamed in the order they arrive."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence

from strixwizard.live.results import Measurement
from strixwizard.node.cancel import Cancel


def in_threads(jobs: Sequence[Callable[[], Iterator[Measurement]]], cancel: Cancel
               ) -> Iterator[Measurement]:
    """Run the jobs in threads; yield their results in the order they arrive. A job that
    raises cancels the run (`cancel`) and the error reaches the consumer."""
    if not jobs:
        return
    inbox: queue.Queue[Measurement | BaseException | None] = queue.Queue()

    def work(job: Callable[[], Iterator[Measurement]]) -> None:
        try:
            for result in job():
                inbox.put(result)
        except BaseException as error:  # surfaced in the consumer, never lost in a thread
            inbox.put(error)
        finally:
            inbox.put(None)

    threads = [threading.Thread(target=work, args=(job,), daemon=True) for job in jobs]
    for thread in threads:
        thread.start()
    done = 0
    while done < len(jobs):
        item = inbox.get()
        if item is None:
            done += 1
        elif isinstance(item, BaseException):
            cancel.cancel()
            raise item
        else:
            yield item
