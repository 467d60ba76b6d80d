"""Where records go: the background JSONL writer (default) and an in-memory list.

A sink receives ``submit(record)`` on the host's hot path. :class:`JsonlSink` only appends the
record to a bounded deque there; its daemon writer thread completes each record
(:func:`loopscope.collectors.records.finish`), serialises it and appends whole lines to the file.
"""

from __future__ import annotations

import atexit
import errno
import json
import math
import os
import stat
import threading
import time
import weakref
from collections import deque
from pathlib import Path
from typing import Any

from loopscope.collectors.guard import Guard
from loopscope.collectors.records import finish


class CollectorConfigError(ValueError):
    """Bad collector configuration, raised at setup (never on the hot path)."""


class Sink:
    """Base class for sinks. Subclasses implement :meth:`emit` (completed records).

    ``submit`` is what the collector calls, with a record that may still need
    :func:`~loopscope.collectors.records.finish`; the default finishes it synchronously and hands
    it to ``emit``. Override ``submit`` to defer that work (as :class:`JsonlSink` does).
    """

    def submit(self, record: dict[str, Any]) -> None:
        """Complete ``record`` (shape, fingerprint, timestamp) and emit it."""
        self.emit(finish(record))

    def emit(self, record: dict[str, Any]) -> None:
        """Receive one completed v1 record."""
        raise NotImplementedError

    def flush(self) -> None:
        """Make everything submitted so far durable (no-op by default)."""

    def close(self) -> None:
        """Flush and release resources (no-op by default)."""

    def stats(self) -> dict[str, int]:
        """Sink counters: ``written``, ``dropped``, ``errors`` (and ``queued``, ``in_flight``)."""
        return {"written": 0, "dropped": 0, "errors": 0}


class _PartialWrite(OSError):
    """A write that failed after ``lines`` whole lines of its batch had reached the file."""

    def __init__(self, exc: OSError, lines: int) -> None:
        super().__init__(exc.errno, exc.strerror)
        self.lines = lines


class MemorySink(Sink):
    """Keeps completed records in ``self.records`` (tests, notebooks, custom forwarding)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def emit(self, record: dict[str, Any]) -> None:
        """Append the record."""
        self.records.append(record)

    def stats(self) -> dict[str, int]:
        """``written`` is the number of records held."""
        return {"written": len(self.records), "dropped": 0, "errors": 0}


def _check_positive(
    name: str, value: Any, *, integer: bool, allow_none: bool = False, allow_zero: bool = False
) -> None:
    if value is None and allow_none:
        return
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or (not integer and not math.isfinite(value)):
        raise CollectorConfigError(f"{name} must be a {'whole' if integer else 'finite'} number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise CollectorConfigError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


class JsonlSink(Sink):
    """Appends records to a JSON Lines file from a background thread.

    The host thread only appends the record to a bounded deque: when it holds
    ``max_queue`` items the record is dropped and counted, never blocking the loop. The writer
    thread wakes at least twice per ``flush_interval``, serialises everything queued, and appends
    whole lines with ``os.write`` on an ``O_APPEND`` descriptor, so a process killed with SIGKILL
    loses at most what it recorded in the last ``flush_interval`` and leaves at most one partial
    last line. The file is rotated by size (``path`` -> ``path.1`` -> ... -> ``path.<backups>``).
    Write errors (full disk, removed directory) are logged once, counted in ``errors`` and the
    affected records dropped; the next cycle tries again. Lines a failed write had already put in
    the file whole (a partial write) count as written.

    The counters balance at every moment: every record the collector handed over is
    ``written``, ``dropped``, ``queued`` or ``in_flight`` (taken by the writer thread, not yet
    written: a batch stuck in a hung write stays there).

    Opening never blocks the host: a named pipe with no reader yet is opened by the writer thread
    (records queue, then drop and count, until a reader comes).

    One process should write one file: rotation is not coordinated between processes.

    Args:
        path: The log file; parent folders are created.
        flush_interval: Seconds; records reach the OS at most this long after being recorded.
        max_queue: Records held in memory before new ones are dropped.
        max_bytes: Rotate before the file would grow past this size; None disables rotation.
        backups: Rotated files kept.

    Raises:
        CollectorConfigError: A bad value, or the file cannot be created / opened for append.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        flush_interval: float = 1.0,
        max_queue: int = 10_000,
        max_bytes: int | None = 64 * 2**20,
        backups: int = 5,
    ) -> None:
        _check_positive("flush_interval", flush_interval, integer=False)
        _check_positive("max_queue", max_queue, integer=True)
        _check_positive("max_bytes", max_bytes, integer=True, allow_none=True)
        _check_positive("backups", backups, integer=True, allow_zero=True)
        self.path = Path(path)
        self.flush_interval = float(flush_interval)
        self.max_queue = max_queue
        self.max_bytes = max_bytes
        self.backups = backups
        self._guard = Guard(strict=False)  # writer-thread errors can never reach the host anyway
        self.written = 0
        self.dropped = 0  # by the writer thread or close(), under _count_lock
        self._host_dropped = 0  # by the host thread (queue full, closed)
        self.in_flight = 0
        self.errors = 0
        self._partial = False
        self._count_lock = threading.Lock()  # counter transitions only, never held during I/O
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd, self._size, self._regular = self._open(setup=True)
        except OSError as exc:
            raise CollectorConfigError(
                f"cannot open the loopscope log {str(self.path)!r} for appending: {exc.strerror or exc}"
            ) from exc
        self._queue: deque[dict[str, Any]] = deque()
        self._io_lock = threading.Lock()
        self._stop = threading.Event()
        self._closed = False
        self.submit = self._make_submit()  # type: ignore[method-assign]
        self._thread = self._start_writer()
        if hasattr(os, "register_at_fork"):
            # A forked child inherits the queue and descriptor but not the thread: start a new one
            # there (and drop the parent's pending records, which the parent writes itself).
            wref = weakref.ref(self)
            os.register_at_fork(after_in_child=lambda: (lambda s: s._after_fork() if s is not None else None)(wref()))
        # atexit keeps only a weak reference, so an abandoned sink can still be collected.
        ref = weakref.ref(self)
        self._atexit = lambda: (lambda s: s.close() if s is not None else None)(ref())
        atexit.register(self._atexit)

    def _start_writer(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name=f"loopscope-writer:{self.path.name}", daemon=True)
        thread.start()
        return thread

    def _after_fork(self) -> None:
        # The parent writes what it had queued or in flight: the child's counters start at zero.
        self._queue.clear()
        self._io_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._stop = threading.Event()
        self.written = self.dropped = self._host_dropped = self.in_flight = self.errors = 0
        if not self._closed:
            self._thread = self._start_writer()

    def _make_submit(self):  # noqa: ANN202 - a closure bound once; it is the hot path
        queue = self._queue
        append = queue.append
        limit = self.max_queue
        sink = self

        def submit(record: dict[str, Any]) -> None:
            if len(queue) >= limit or sink._closed:
                sink._drop()
                return
            append(record)

        return submit

    def _drop(self) -> None:
        self._host_dropped += 1
        if self._closed:
            self._guard.once("closed", 30, "loopscope: record after the JSONL sink %s was closed; dropped", self.path)
        else:
            self._guard.once(
                "full", 30, "loopscope: writer queue full (%d records); dropping records (counted)", self.max_queue
            )

    # -- file handling (writer thread, or a flushing/closing thread, under _io_lock) --

    def _open(self, setup: bool = False) -> tuple[int, int, bool]:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        if setup and hasattr(os, "O_NONBLOCK"):
            # open() of a named pipe waits for a reader: never on the host's thread.
            try:
                fd = os.open(self.path, flags | os.O_NONBLOCK, 0o644)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # a FIFO with no reader: the writer thread opens it
                    return -1, 0, False
                raise
            os.set_blocking(fd, True)
        else:
            fd = os.open(self.path, flags, 0o644)
        st = os.fstat(fd)
        return fd, st.st_size, stat.S_ISREG(st.st_mode)

    def _rotate(self) -> None:
        os.close(self._fd)
        self._fd = -1
        base = str(self.path)
        if self.backups > 0:
            for i in range(self.backups - 1, 0, -1):
                src = f"{base}.{i}"
                if os.path.exists(src):
                    os.replace(src, f"{base}.{i + 1}")
            os.replace(base, f"{base}.1")
        else:
            os.truncate(base, 0)
        self._fd, self._size, self._regular = self._open()

    def _write_all(self, data: bytes) -> int:
        """Write ``data`` whole; on failure raise with how many bytes reached the file."""
        view = memoryview(data)
        done = 0
        try:
            while view:
                n = os.write(self._fd, view)
                if n <= 0:
                    raise OSError(errno.EIO, "short write")
                self._partial = True
                done += n
                self._size += n
                view = view[n:]
        except OSError as exc:
            exc.bytes_written = done  # type: ignore[attr-defined]
            raise
        self._partial = False
        return done

    def _write_chunk(self, chunk: list[bytes], done_before: int) -> None:
        try:
            self._write_all(b"".join(chunk))
        except OSError as exc:
            # Whole lines before the cut are in the file: count them as written, not dropped.
            left = getattr(exc, "bytes_written", 0)
            whole = 0
            for line in chunk:
                if left < len(line):
                    break
                left -= len(line)
                whole += 1
            if whole and left == 0:
                self._partial = False  # the cut fell between two lines
            raise _PartialWrite(exc, done_before + whole) from exc

    def _write_lines(self, lines: list[bytes]) -> None:
        if self._fd < 0:
            # Only the writer thread may wait in open() (a named pipe with no reader); a flush
            # or close on another thread gives up at once and the records count as dropped.
            host = threading.current_thread() is not self._thread
            self._fd, self._size, self._regular = self._open(setup=host)
            if self._fd < 0:
                raise OSError(errno.ENXIO, "a named pipe with no reader")
        if self._partial:
            # A failed write left half a line: end it so the next record starts on its own line.
            self._write_all(b"\n")
        chunk: list[bytes] = []
        size = 0
        done = 0
        limit = self.max_bytes if self._regular else None
        for line in lines:
            if limit is not None and self._size + size + len(line) > limit and (self._size + size) > 0:
                if chunk:
                    self._write_chunk(chunk, done)
                    done += len(chunk)
                    chunk, size = [], 0
                if self._size > 0:
                    try:
                        self._rotate()
                    except OSError as exc:
                        raise _PartialWrite(exc, done) from exc
            chunk.append(line)
            size += len(line)
        if chunk:
            self._write_chunk(chunk, done)

    def _take(self) -> list[dict[str, Any]]:
        """Move up to 4,096 records from the queue to in flight, as one step for stats()."""
        popleft = self._queue.popleft
        with self._count_lock:
            batch = [popleft() for _ in range(min(len(self._queue), 4096))]
            self.in_flight += len(batch)
        return batch

    def _settle(self, taken: int, written: int) -> None:
        with self._count_lock:
            self.written += written
            self.dropped += taken - written
            self.in_flight -= taken

    def _drain(self) -> None:
        queue = self._queue
        encode = _ENCODER.encode
        while queue:
            batch = self._take()
            lines: list[bytes] = []
            for rec in batch:
                try:
                    lines.append((encode(finish(rec)) + "\n").encode("utf-8", "surrogatepass"))
                except Exception as exc:  # noqa: BLE001 - one bad record must not stop the writer
                    self.errors += 1
                    self._guard.once(
                        f"encode:{type(exc).__name__}", 40, "loopscope: cannot serialise a record", exc_info=exc
                    )
            taken = len(batch)
            del batch
            if not lines:
                self._settle(taken, 0)
                continue
            try:
                self._write_lines(lines)
            except OSError as exc:
                self.errors += 1
                self._settle(taken, getattr(exc, "lines", 0))
                self._guard.once(
                    f"write:{exc.errno}",
                    40,
                    "loopscope: cannot write %s (%s); records dropped and counted, the loop is unaffected",
                    self.path,
                    exc.strerror or exc,
                )
                if self._fd >= 0 and not self._regular:
                    continue
                if self._fd >= 0 and exc.errno in (errno.EBADF, errno.ESTALE):
                    self._fd = -1
            except BaseException:
                self._settle(taken, 0)
                raise
            else:
                self._settle(taken, len(lines))

    def _run(self) -> None:
        wait = self.flush_interval / 2
        while not self._stop.wait(wait):
            try:
                with self._io_lock:
                    self._drain()
            except Exception as exc:  # noqa: BLE001 - the writer thread must survive anything
                self.errors += 1
                self._guard.once("writer", 40, "loopscope: writer thread error", exc_info=exc)
        if self._closed:
            # close() may have given up waiting for a hung write; the descriptor is ours to close.
            with self._io_lock:
                self._close_fd()

    def _close_fd(self) -> None:
        """Close the descriptor if open (an error closing it is ignored); the caller holds the I/O lock."""
        if self._fd >= 0:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1

    # -- public --

    def _wait_io(self, timeout: float | None) -> bool:
        """Take the I/O lock, waiting at most ``timeout`` s (default: max(5 s, flush interval))."""
        wait = max(5.0, self.flush_interval) if timeout is None else max(0.0, float(timeout))
        if self._io_lock.acquire(timeout=wait):
            return True
        self._guard.once(
            "stuck", 30, "loopscope: the writer of %s is stuck in a write for over %.1f s; not waiting", self.path, wait
        )
        return False

    def flush(self, timeout: float | None = None) -> bool:
        """Write everything queued so far, in the calling thread.

        Args:
            timeout: Seconds to wait for a write the writer thread is in the middle of (a slow
                or hung disk); default max(5 s, ``flush_interval``).

        Returns:
            False when the writer stayed busy past ``timeout`` (the queue is left to it).
        """
        if not self._wait_io(timeout):
            return False
        try:
            self._drain()
        finally:
            self._io_lock.release()
        return True

    def close(self, timeout: float | None = None) -> None:
        """Stop the writer, write what is queued, close the file. Idempotent.

        Waits at most ``timeout`` seconds in all (default max(5 s, ``flush_interval``)) for the
        writer thread: when a hung disk keeps it busy longer, what is still queued is dropped and
        counted, so interpreter exit never hangs on the log.
        """
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        wait = max(5.0, self.flush_interval) if timeout is None else max(0.0, float(timeout))
        deadline = time.monotonic() + wait
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=wait)
        if self._wait_io(deadline - time.monotonic()):
            try:
                self._drain()
                self._close_fd()
            finally:
                self._io_lock.release()
        else:
            # The writer still owns the descriptor; it exits after its current write.
            popleft = self._queue.popleft
            with self._count_lock:
                while True:
                    try:
                        popleft()
                    except IndexError:
                        break
                    self.dropped += 1
        atexit.unregister(self._atexit)

    def stats(self) -> dict[str, int]:
        """``written`` lines, ``dropped`` records (queue full, closed, unserialisable, or write failed),
        ``queued``, ``in_flight`` (taken by the writer, not yet written), ``errors``.

        One consistent snapshot: records handed over = written + dropped + queued + in_flight.
        """
        with self._count_lock:
            return {
                "written": self.written,
                "dropped": self.dropped + self._host_dropped,
                "errors": self.errors,
                "queued": len(self._queue),
                "in_flight": self.in_flight,
            }
