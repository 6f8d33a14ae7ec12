"""``make ui`` as a user meets it: the server and the served deployments come up in one command,
a paper's deployment runs from the API, a failed stage fails its run cleanly, the UI shows it all
in a browser, and Ctrl-C stops everything.

One ``flows.ui`` process on a free port, with its own Prefect home, serves the fixture DAG for the
whole module (the tests share its runs).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from flows.reproduce import NOT_RUN, artifact_key
from flows.ui import healthy
from tests.flows.conftest import BIN, make_fixture_repo, set_params

ROOT = Path(__file__).resolve().parents[2]
WAIT = 300  # seconds: an upper bound on a busy machine, never an expectation


@dataclass
class Ui:
    """The running ``python -m flows.ui`` of this module."""

    proc: subprocess.Popen
    url: str  # the API's
    repo: Path
    log: Path

    @property
    def web(self) -> str:
        return self.url.removesuffix("/api")

    def output(self, tail: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-tail:]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _client(ui: Ui):
    from prefect.client.orchestration import SyncPrefectClient

    return SyncPrefectClient(ui.url)


def _wait(what: str, check, ui: Ui, timeout: float = WAIT):
    """Poll ``check()`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ui.proc.poll() is not None:
            pytest.fail(f"flows.ui exited ({ui.proc.returncode}) while waiting for {what}:\n{ui.output()}")
        if found := check():
            return found
        time.sleep(1)
    pytest.fail(f"timed out waiting for {what}:\n{ui.output()}")


@pytest.fixture(scope="module")
def ui(tmp_path_factory) -> Iterator[Ui]:
    """``python -m flows.ui`` serving the fixture DAG, as ``make ui`` starts it (own home and port)."""
    tmp = tmp_path_factory.mktemp("ui")
    repo = make_fixture_repo(tmp / "repo")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp / "home"), PREFECT_RUNNER_POLL_FREQUENCY="1",
               PATH=f"{BIN}{os.pathsep}{env['PATH']}")
    log = tmp / "ui.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "flows.ui", "--port", str(port), "--root", str(repo)],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    running = Ui(proc, f"http://127.0.0.1:{port}/api", repo, log)
    try:
        _wait("the served deployments", lambda: "Your deployments are being served" in log.read_text(), running)
        yield running
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(120)


@pytest.fixture(scope="module")
def alpha_run(ui):
    """A finished run of the ``reproduce/alpha`` deployment, triggered through the API."""
    with _client(ui) as client:
        deployment = client.read_deployment_by_name("reproduce/alpha")
        run = client.create_flow_run_from_deployment(deployment.id)
        return _wait("the alpha run to finish", lambda: (r := client.read_flow_run(run.id)).state.is_final() and r, ui)


def _task_runs(client, flow_run_id) -> dict:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return {run.name: run for run in runs}


@pytest.mark.slow
def test_make_ui_serves_the_deployments_and_runs_a_paper(ui, alpha_run):
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    assert alpha_run.state.is_completed(), alpha_run.state
    with _client(ui) as client:
        nightly = client.read_deployment_by_name("reproduce/nightly")
        tasks = _task_runs(client, alpha_run.id)  # the run a deployment's URL opens holds the stages
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[alpha_run.id])))
    assert nightly.schedules[0].schedule.cron == "0 2 * * *"
    assert set(tasks) == {"assets-base", "alpha-data", "alpha-report"}
    assert all(t.state.is_completed() for t in tasks.values())
    results = {a.key: a for a in artifacts}[artifact_key("alpha")].data
    assert "| n is large: n >= 100 | **fails** | 1 | 1 |" in results
    told = ui.output(tail=10**6)
    assert f"Prefect UI: {ui.web}" in told and "Ctrl-C stops serving" in told


@pytest.mark.slow
def test_a_command_line_run_finds_the_running_ui_server(ui, monkeypatch):
    from flows.reproduce import project_server

    monkeypatch.setenv("PREFECT_SERVER_API_PORT", ui.url.rsplit(":", 1)[1].removesuffix("/api"))
    assert project_server() == ui.url
    monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(_free_port()))
    assert project_server() is None


@pytest.mark.slow
def test_failed_stage_fails_the_deployment_run_without_a_traceback(ui, alpha_run):
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    set_params(ui.repo, beta={"fail": True})
    with _client(ui) as client:
        run = client.create_flow_run_from_deployment(client.read_deployment_by_name("reproduce/beta").id)
        done = _wait("the beta run to finish", lambda: (r := client.read_flow_run(run.id)).state.is_final() and r, ui)
        final = "Finished in state Failed('stage beta-data failed"

        def logs():
            found = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
            return found if any(final in log.message for log in found) else None

        found = _wait("the run's last log line", logs, ui, timeout=60)
        messages = [log.message for log in found]
        tasks = _task_runs(client, run.id)
    assert done.state.is_failed()
    assert done.state.message == ("stage beta-data failed: RuntimeError: beta-data failing on purpose; "
                                  "3 downstream stage(s) not run")
    stage_output = [m for m in messages if m.startswith("beta-data | ")]  # the stage's own traceback, as DVC printed it
    assert not [m for m in messages if m not in stage_output and ("Traceback" in m or "Engine execution exited" in m)]
    assert not [m for m in messages if "NoneType: None" in m]
    assert all("beta-data" in log.message for log in found if log.level >= 40)  # errors are the failed stage's only
    assert {name for name, t in tasks.items() if t.state.name == NOT_RUN} == {"beta-train@1", "beta-train@2",
                                                                              "beta-report"}
    assert all(t.state.is_final() and t.end_time for t in tasks.values())


def _chromium() -> tuple[str, str]:
    """Paths of chromium and chromedriver: installed with apt-get when missing and possible, else a skip."""
    def found() -> tuple[str | None, str | None]:
        return shutil.which("chromium"), shutil.which("chromedriver")

    if not all(found()) and shutil.which("apt-get") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium", "chromium-driver"]):
            subprocess.run(cmd, env=env, capture_output=True, timeout=600)
    chromium, driver = found()
    if not (chromium and driver):
        pytest.skip("browser test needs Debian's chromium and chromium-driver, which are missing here and could not "
                    "be installed (apt-get as root): apt-get install chromium chromium-driver")
    return chromium, driver


@pytest.fixture(scope="module")
def browser():
    """A headless chromium driven by selenium."""
    chromium, driver = _chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000"):
        options.add_argument(arg)
    session = webdriver.Chrome(options=options, service=Service(driver))
    try:
        yield session
    finally:
        session.quit()


def _page_shows(browser, *texts: str, timeout: float = 60) -> str:
    """Wait until the page's text holds every one of ``texts``; return it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def shown(driver):
        body = driver.find_element(By.TAG_NAME, "body").text
        return body if all(t in body for t in texts) else False

    try:
        return WebDriverWait(browser, timeout, poll_frequency=0.5).until(shown)
    except Exception:
        pytest.fail(f"page {browser.current_url} never showed {texts}:\n"
                    f"{browser.find_element(By.TAG_NAME, 'body').text[:3000]}")


def _click(browser, label: str) -> None:
    """Click the innermost element whose whole text is ``label`` (a tab, a link)."""
    from selenium.webdriver.common.by import By

    matches = browser.find_elements(By.XPATH, f"//*[normalize-space(.)='{label}']")
    assert matches, f"nothing labelled {label!r} on {browser.current_url}"
    matches[-1].click()


@pytest.mark.slow
def test_ui_in_a_browser_shows_schedule_stage_tasks_and_verdict(ui, alpha_run, browser):
    with _client(ui) as client:
        nightly = client.read_deployment_by_name("reproduce/nightly")
    browser.get(f"{ui.web}/deployments/deployment/{nightly.id}")
    _page_shows(browser, "nightly", "Schedules", "At 02:00 AM every day")

    browser.get(f"{ui.web}/runs/flow-run/{alpha_run.id}")
    _page_shows(browser, alpha_run.name, "Completed", "3 Task runs", "Deployment")
    _click(browser, "Task Runs")
    _page_shows(browser, "assets-base", "alpha-data", "alpha-report")
    _click(browser, "Artifacts")
    _page_shows(browser, artifact_key("alpha"), "reproduce-summary")
    _click(browser, artifact_key("alpha"))
    page = _page_shows(browser, "Verdict: partly", "holds", "fails", "unclear")
    assert "n is large: n >= 100" in page


@pytest.mark.slow
def test_ctrl_c_stops_serving_and_the_server(ui):
    ui.proc.send_signal(signal.SIGINT)
    assert ui.proc.wait(120) == 0, ui.output()
    assert not healthy(ui.url)
    assert "Stopping" in ui.output() and "Pausing all deployments" in ui.output()
