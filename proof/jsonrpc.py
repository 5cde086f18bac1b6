"""One JSON-RPC 2.0 client over a child's stdio, one JSON object per line: the framing of the
Agent Client Protocol, which ``grok agent stdio``, ``copilot --acp`` and ``dcode --acp``
speak (https://agentclientprotocol.com/protocol/overview).

A request the agent sends us (it has ``method`` and ``id``: a permission, a file or a
terminal) is answered by ``on_request`` when that returns a result, else refused with
-32601: the rig grants nothing by default. Notifications (``method``, no ``id``) are kept
in arrival order. Library code: never prints; failures raise the loader's own error type.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

JsonObj = dict[str, Any]
#: answers an agent's request ``(method, params)`` with a result, or None to refuse it
OnRequest = Callable[[str, JsonObj], JsonObj | None]
NOT_SUPPORTED = {"code": -32601, "message": "not supported by trajconv"}


class RpcError(RuntimeError):
    """The agent could not be started, stopped answering, or exited."""


class StdioRpc:
    """A started agent and its JSON-RPC conversation; ``close()`` ends it."""

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        on_request: OnRequest | None = None,
        error: type[Exception] = RpcError,
    ) -> None:
        self.name = " ".join([Path(argv[0]).name, *argv[1:2]])
        self._error = error
        self._on_request = on_request
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
            )
        except OSError as exc:
            self._stderr.close()
            raise error(f"cannot start {argv[0]}: {exc}") from exc
        self._inbox: queue.Queue[JsonObj | None] = queue.Queue()
        self._next_id = 0
        self._final_stderr: str | None = None
        #: every notification received so far, whole messages in arrival order
        self.notifications: list[JsonObj] = []
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                continue  # not protocol output (a stray log line)
            if isinstance(message, dict):
                self._inbox.put(message)
        self._inbox.put(None)

    def _send(self, message: JsonObj) -> None:
        stdin = self.proc.stdin
        try:
            assert stdin is not None
            stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            stdin.flush()
        except (OSError, ValueError) as exc:
            raise self._error(
                f"{self.name} closed its input: {exc}; stderr: {self.stderr_tail}"
            ) from exc

    def _incoming(self, message: JsonObj) -> None:
        if "id" not in message:
            self.notifications.append(message)
            return
        answer = None
        if self._on_request is not None:
            params = message.get("params")
            answer = self._on_request(str(message["method"]), params if params else {})
        if answer is not None:
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": answer})
        else:
            self._send({"jsonrpc": "2.0", "id": message["id"], "error": NOT_SUPPORTED})

    def request(self, method: str, params: JsonObj, timeout: float) -> JsonObj:
        """Send one request and return its whole response (``result`` or ``error``),
        handling what arrives before it; ``timeout`` is a hang guard."""
        self._next_id += 1
        rid = self._next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._error(
                    f"{self.name}: no answer to {method} within {timeout:.0f}s; "
                    f"stderr: {self.stderr_tail}"
                )
            try:
                message = self._inbox.get(timeout=left)
            except queue.Empty:
                continue
            if message is None:
                raise self._error(
                    f"{self.name} exited before answering {method} (rc {self.proc.poll()}); "
                    f"stderr: {self.stderr_tail}"
                )
            if "method" in message:
                self._incoming(message)
            elif message.get("id") == rid:
                return message

    def call(self, method: str, params: JsonObj, timeout: float) -> tuple[JsonObj, list[JsonObj]]:
        """:meth:`request`, with the notifications that arrived before its response."""
        seen = len(self.notifications)
        response = self.request(method, params, timeout)
        return response, self.notifications[seen:]

    def drain(self, quiet: float) -> None:
        """Handle what arrives after a response until ``quiet`` seconds pass without a
        message (late notifications an agent schedules after answering)."""
        while True:
            try:
                message = self._inbox.get(timeout=quiet)
            except queue.Empty:
                return
            if message is None:
                return
            if "method" in message:
                self._incoming(message)

    @property
    def stderr_tail(self) -> str:
        """The last 4000 bytes the agent wrote to stderr (kept after :meth:`close`)."""
        if self._final_stderr is not None:
            return self._final_stderr
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - 4000))
            return self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def close(self, timeout: float = 10.0) -> None:
        """Close stdin (an ACP agent exits on EOF); terminate, then kill, one that lingers."""
        proc = self.proc
        try:
            if proc.stdin is not None and not proc.stdin.closed:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
        self._reader.join(timeout=timeout)
        if proc.stdout is not None:
            proc.stdout.close()
        self._final_stderr = self.stderr_tail
        self._stderr.close()
