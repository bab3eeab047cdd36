"""The viewer in a real browser: Debian's headless Chromium (WebGL through SwiftShader, its
software renderer) driven by Selenium and ChromeDriver.

``vm-view`` is started as a process on a spacecraft_arm recording and plays it; the test loads
the page, waits for the scene, and checks from screenshots of the WebGL canvas that the robot
is drawn (pixels of the bus's gold and the solar wings' blue), that the picture changes as the
arm moves, that the page logs no error, and that the browser asked for nothing outside
127.0.0.1.  Chromium and ChromeDriver come from ``apt-get install chromium chromium-driver``
(``.ci/run`` does it); without them the test is skipped, except under CI=true where it fails.
"""
import io
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest
from test_viewer import spacecraft_recording

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
#: the flags that give headless Chromium working WebGL here (ANGLE on SwiftShader) and keep it
#: from contacting anything but the page it is sent to
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--use-angle=swiftshader",
                  "--enable-unsafe-swiftshader", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync",
                  "--disable-default-apps", "--disable-extensions", "--window-size=900,700",
                  "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]


def _browser_or_skip():
    import os
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).is_file()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install vm_dynamics[test])")
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser test needs {', '.join(missing)} (.ci/run installs them)")
        pytest.skip(f"needs {', '.join(missing)}")


@pytest.fixture
def browser():
    _browser_or_skip()
    import viser  # noqa: F401
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    profile = tempfile.mkdtemp(prefix="vm-view-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def vm_view(tmp_path):
    spacecraft_recording(tmp_path / "r.mcap", n=81, duration=8.0)
    proc = subprocess.Popen([sys.executable, "-u", "-m", "vm_dynamics.viewer.cli",
                             str(tmp_path / "r.mcap"), "--port", "0", "--play"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        url = None
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            m = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
            url = m.group(1) if m else None
        assert url, proc.stderr.read() if proc.poll() is not None else "no URL printed"
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()


#: rows of the canvas screenshot under viser's overlays (GUI panel, notifications): the
#: checks look at the 3D scene only
SCENE_ROWS = slice(200, None)


def canvas_pixels(driver):
    """RGB pixels (int) of the WebGL canvas below the overlays."""
    from PIL import Image
    from selenium.webdriver.common.by import By
    canvas = driver.find_element(By.TAG_NAME, "canvas")
    return np.asarray(Image.open(io.BytesIO(canvas.screenshot_as_png)).convert("RGB"),
                      dtype=int)[SCENE_ROWS]


def robot_pixels(img):
    """Fractions of pixels in the bus's gold (R > G > B, R - B > 70) and the wings' blue
    (B > R + 40) colours."""
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    gold = (r > g) & (g > b) & (r - b > 70)
    blue = b > r + 40
    return float(gold.mean()), float(blue.mean())


def test_vm_view_draws_the_robot_in_headless_chromium(browser, vm_view, tmp_path):
    browser.get(vm_view)
    deadline = time.monotonic() + 90
    img = None
    while time.monotonic() < deadline:   # wait for the WebGL scene
        try:
            img = canvas_pixels(browser)
        except Exception:   # the canvas is not there yet
            time.sleep(1.0)
            continue
        if min(robot_pixels(img)) > 0.002:
            break
        time.sleep(1.0)
    assert img is not None, "no <canvas> on the page"
    gold, blue = robot_pixels(img)
    assert gold > 0.002 and blue > 0.002, (gold, blue)   # the bus and the wings are drawn
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 100   # shaded, not blank or flat
    (tmp_path / "first.png").write_bytes(browser.get_screenshot_as_png())

    time.sleep(2.5)   # the replay plays: the arm moves, the bus drifts
    later = canvas_pixels(browser)
    changed = float((np.abs(later - img).sum(axis=2) > 30).mean())
    assert changed > 0.001, changed

    logs = browser.get_log("browser")
    errors = [e for e in logs if e["level"] == "SEVERE"]
    assert errors == [], errors
    hosts = set()
    for entry in browser.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] in ("Network.requestWillBeSent", "Network.webSocketCreated"):
            url = msg["params"].get("request", {}).get("url") or msg["params"].get("url", "")
            if urlparse(url).scheme in ("http", "https", "ws", "wss"):
                hosts.add(urlparse(url).hostname)
    assert hosts == {"127.0.0.1"}, hosts
