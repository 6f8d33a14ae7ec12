"""The Prefect UI with the deployments served, in one command: ``make ui`` (Ctrl-C stops both).

Starts ``prefect server start`` on the loopback address with the project's settings
(prefect.toml: its Prefect home, analytics off), waits until its API answers, then serves the
deployments of flows/serve.py (nightly, and one per paper) against it. Ctrl-C stops serving
(Prefect then pauses the deployments until they are served again) and stops the server.

    python -m flows.ui [--port 4200] [--runner dask]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from flows.settings import ROOT, api_url

BIN = Path(sys.executable).parent


def healthy(url: str) -> bool:
    """Whether the Prefect API at ``url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def wait_healthy(url: str, server: subprocess.Popen, timeout: float) -> None:
    """Wait until the server at ``url`` answers; raise if it exits or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not healthy(url):
        if server.poll() is not None:
            raise RuntimeError(f"the Prefect server exited with status {server.returncode} before answering")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Prefect server did not answer at {url} within {timeout:.0f} s "
                               "(server.ephemeral.startup_timeout_seconds in prefect.toml)")
        time.sleep(0.5)


def stop(proc: subprocess.Popen | None, sig: int, grace: float) -> None:
    """Send ``sig`` to a child started here, wait ``grace`` seconds, then kill it."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def banner(ui: str, url: str) -> str:
    """What the user reads once the UI is up."""
    return "\n".join([
        f"Prefect UI: {ui}   (runs recorded in {os.environ['PREFECT_HOME']})",
        "Served: reproduce/nightly (02:00 UTC) and reproduce/<paper> for each paper.",
        "Run a paper with 'Run' on its deployment in the UI, or from another terminal:",
        f"  PREFECT_API_URL={url} prefect deployment run 'reproduce/matrix_denoising'",
        "  python -m flows.reproduce --paper matrix_denoising   # a one-off run, recorded on this server too",
        "Ctrl-C stops serving (the deployments stay paused until the next 'make ui') and the server.",
    ])


def main(argv: list[str] | None = None) -> int:
    """Start the server (unless one answers already), serve the deployments until Ctrl-C, stop both."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PREFECT_SERVER_API_PORT", "4200")))
    parser.add_argument("--runner", default="threads", choices=["threads", "dask"])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository whose DAG the deployments run")
    args = parser.parse_args(argv)
    host = os.environ.get("PREFECT_SERVER_API_HOST", "127.0.0.1")
    url = api_url(host, args.port)
    ui = url.removesuffix("/api")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PREFECT_SERVER_API_PORT=str(args.port),
               PREFECT_SERVER_API_HOST=host)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even where a shell started us with SIGINT ignored
    signal.signal(signal.SIGTERM, _interrupt)
    server = serve = None
    try:
        if healthy(url):
            print(f"A Prefect server already answers at {ui}: serving the deployments there.", flush=True)
        else:
            # Own session: Ctrl-C reaches this process only, which stops the children in order.
            server = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", host, "--port",
                                       str(args.port)], cwd=ROOT, env=env, start_new_session=True)
            wait_healthy(url, server, float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", 90)))
        print(banner(ui, url), flush=True)
        serve = subprocess.Popen([sys.executable, "-m", "flows.serve", "--runner", args.runner, "--root",
                                  str(args.root.resolve())], cwd=ROOT, env={**env, "PREFECT_API_URL": url},
                                 start_new_session=True)
        code = serve.wait()
        print(f"flows.serve exited with status {code}", file=sys.stderr)
        return code or 1
    except KeyboardInterrupt:
        print("\nStopping: the deployments are paused, then the server stops.", flush=True)
        return 0
    except RuntimeError as err:
        print(f"make ui: {err}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop(serve, signal.SIGINT, 60)
        stop(server, signal.SIGTERM, 30)


if __name__ == "__main__":
    raise SystemExit(main())
