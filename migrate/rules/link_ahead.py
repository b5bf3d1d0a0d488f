"""The history's content lookups read ahead, on threads of their own.

The links check asks, for each list of history rows, which commits name no content row
(:meth:`~migrate.rules.link_namespace.NamespaceCheck.history_list`).  Into a new store the
answer comes from the content ids the pass kept and, for the others, from the source's own
verified lookups: one C call per list, which lets go of the GIL.  A source that can answer
from other threads (:meth:`migrate.pipeline.fresh._Tee.history_ahead`) has the history's
next lists read on a thread and asked about on others -- each with lookup handles of its own,
list after list in turn -- while the check works through the current list in Python: the
lookups overlap the check, and one another, instead of coming between its lists.

The answers are the same.  A list's answer is the set of its commits that ``missing`` names,
and membership in it is exactly what ``missing`` says of each commit.  When the lookups of a
list fail on a thread, the list comes without an answer: the check then asks ``missing``
itself when it reaches that list, and fails there with the same error, after the findings of
the lists before it.  When reading the history fails, the check gets that error at the list
it failed on.  At most :data:`DEPTH` lists per worker wait ahead.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import cast

from migrate.store.codec import ID_LEN

Row = tuple[bytes, bytes]
Missing = Callable[[Sequence[bytes]], list[int]]
#: The commits of a list that name no content row (None: not answered ahead).
Answer = set[bytes] | None
DEPTH = 2
_DONE = object()


def _answer(batch: list[Row], missing: Missing) -> Answer:
    """The commits of ``batch`` (its values of a commit's length) that ``missing`` names;
    None when the lookups fail (the check then asks again, and fails, in its own order)."""
    commits = [value for _, value in batch if type(value) is bytes and len(value) == ID_LEN]
    try:
        return {commits[i] for i in missing(commits)}
    except Exception:
        return None


class Ahead:
    """The lists of ``batches``, each with its :data:`Answer`, read on a thread and answered
    on one thread per ``missing`` (each its own lookups: list *i* goes to ``missings[i % n]``);
    see the module docstring.  :meth:`close` stops the threads and waits for them: the
    source must stay open until then."""

    def __init__(self, batches: Iterable[list[Row]], missings: Sequence[Missing]) -> None:
        assert missings
        self._queue: queue.Queue[object] = queue.Queue(DEPTH * len(missings))
        self._stop = threading.Event()
        self._workers = [ThreadPoolExecutor(1, thread_name_prefix="links-lookups")
                         for _ in missings]  # fmt: skip
        self._thread = threading.Thread(target=self._run, args=(iter(batches), missings),
                                        name="links-ahead", daemon=True)  # fmt: skip
        self._thread.start()

    def _run(self, batches: Iterator[list[Row]], missings: Sequence[Missing]) -> None:
        n = len(missings)
        try:
            for i, batch in enumerate(batches):
                answer = self._workers[i % n].submit(_answer, batch, missings[i % n])
                if not self._put((batch, answer)):
                    return
        except BaseException as exc:  # reading the history failed: the check gets it there
            self._put(exc)
            return
        self._put(_DONE)

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[tuple[list[Row], Answer]]:
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            batch, future = cast(tuple[list[Row], "Future[Answer]"], item)
            yield batch, future.result()

    def close(self) -> None:
        """Stop reading ahead and wait for the threads (each ends after its current list)."""
        self._stop.set()
        self._thread.join()
        for worker in self._workers:
            worker.shutdown(wait=True, cancel_futures=True)


def answered(batches: Iterable[list[Row]]) -> Iterator[tuple[list[Row], Answer]]:
    """``batches`` without answers (each list is asked about when the check reaches it)."""
    return ((batch, None) for batch in batches)


def absent_in(answer: Answer, commits: Sequence[bytes]) -> list[int]:
    """The positions of ``commits`` (all from the list ``answer`` was given for) that name no
    content row."""
    if not answer:
        return []
    return [i for i, commit in enumerate(commits) if commit in answer]
