"""Drive JupyterLab in a real browser: a throwaway server, a notebook run with Run All,
one change per widget. Used by test_notebooks.py; every wait here has a timeout.

The server serves COPIES of the notebooks from a temporary folder (autosave never
touches the repository) with settings that render every cell in the DOM
(windowingMode "none") and never fetch news from the network."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    # without these Chromium phones home and the closed CI network refuses its connections
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

SETTINGS = {
    # every cell rendered in the DOM, so widgets far down the page exist and can be found
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # no "Would you like to receive official Jupyter news?" toast, no update check
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}


class LabServer:
    """``jupyter lab`` on a free port with a random token, serving ``root``."""

    def __init__(self, python: str, root: Path, settings_dir: Path, log_path: Path,
                 start_timeout: float = 120.0):
        self.root, self.log_path = root, log_path
        self.token = secrets.token_hex(16)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        for rel, value in SETTINGS.items():
            path = settings_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        # the user's own Jupyter config, settings and workspaces stay out of it
        env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings_dir),
                   JUPYTERLAB_WORKSPACES_DIR=str(settings_dir / "workspaces"),
                   JUPYTER_CONFIG_DIR=str(settings_dir / "config"))
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [python, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
             "--ServerApp.ip=127.0.0.1", f"--port={self.port}", "--port-retries=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
             # window.jupyterapp: the test reads the kernel's status from the app
             "--LabApp.expose_app_in_browser=True"],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                self.api("GET", "api/status")
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n"
                                       + self.log_tail())
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"jupyter lab did not answer in {start_timeout:.0f} s:\n"
                                       + self.log_tail())
                time.sleep(0.5)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def api(self, method: str, path: str, timeout: float = 10.0):
        req = urllib.request.Request(self.base + path, method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return json.loads(body) if body else None

    def notebook_url(self, name: str, workspace: str) -> str:
        # a fresh workspace + ?reset: no layout restored from an earlier notebook
        return f"{self.base}lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        """Shut down every session's kernel (and so its ranks) between notebooks."""
        try:
            for s in self.api("GET", "api/sessions"):
                self.api("DELETE", f"api/sessions/{s['id']}", timeout=30)
        except OSError:
            pass

    def log_tail(self, n: int = 40) -> str:
        self._log.flush()
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server, its kernels (each in its own session) and their ranks,
        however the test ended: graceful first, then SIGKILL to every process left."""
        import psutil  # a dependency of ipykernel, so in the venv wherever Jupyter is

        try:
            family = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.Error:
            family = []
        if self.proc.poll() is None:
            try:
                self.api("POST", "api/shutdown", timeout=10)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait(timeout=10)
        for p in family:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(family, timeout=10)
        self._log.close()


def copy_notebooks(src: Path, dst: Path) -> list[str]:
    names = sorted(p.name for p in src.glob("*.ipynb"))
    for n in names:
        shutil.copy(src / n, dst / n)
    return names


def chromium_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or out.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
