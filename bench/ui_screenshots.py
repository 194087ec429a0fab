"""Screenshots of every view of ``lcg ui`` (issue 32), taken by the system Chromium through
Playwright, of what ``make demo`` leaves: the Apollo corpus synced into group ``apollo`` of a
fresh workspace (declared documents and links, no LLM), plus one ``lcg eval run`` so the
Quality view has a report.

    PYTHONPATH=tests .venv/bin/python bench/ui_screenshots.py      # writes docs/img/ui-*.png
    PYTHONPATH=tests .venv/bin/python bench/ui_screenshots.py --out DIR --embedder hash

The workspace is a temporary folder, removed afterwards; ``lcg demo``'s service and ``lcg ui``
are stopped. The pages are 1280×860 viewports, not whole pages (the entity
page down to the bottom of its graph).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from lcg.rpc import Client

try:
    # The browser and `lcg ui` helpers are the browser tests' own.
    import _ui_fixtures as uf
except ImportError:  # pragma: no cover - said to the person running it
    raise SystemExit(
        "run it as: PYTHONPATH=tests .venv/bin/python bench/ui_screenshots.py"
    ) from None

REPO = Path(__file__).resolve().parents[1]
LCG = Path(sys.executable).parent / "lcg"
GROUP = "apollo"
SEARCH = "lunar module descent"
ENTITY = "Apollo 11"
SOURCE = "apollo/Apollo 11.md"


def _env(embedder: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "ANTHROPIC_"))}
    env["LCG_TELEMETRY"] = "off"
    if embedder:
        env["LCG_EMBEDDER"] = embedder
    return env


def _lcg(ws: Path, env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [str(LCG), "-C", str(ws), *args], env=env, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise SystemExit(f"lcg {' '.join(args)} failed ({done.returncode}): {done.stderr}")


def _uuid(client: Client, name: str) -> str:
    found = client.call(
        "knowledge_find_entities", {"query": name, "group_ids": [GROUP], "num_results": 10}
    )
    return next(str(n["uuid"]) for n in found["nodes"] if n["name"] == name)


def _shoot(out: Path, ws: Path, env: dict[str, str]) -> list[Path]:
    log = ws / "ui.log"
    with log.open("ab") as err:
        ui = subprocess.Popen(
            [str(LCG), "-C", str(ws), "ui", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
        )
    written: list[Path] = []
    try:
        url, port, _token = uf.read_url(ui, log)
        origin = f"http://127.0.0.1:{port}"
        with Client(ws / ".lcg" / "service.sock", timeout=120) as client:
            entity = _uuid(client, ENTITY)
        views = {
            "home": "/",
            "search": f"/search?q={quote(SEARCH)}&group={GROUP}",
            "entity": f"/entity/{entity}?group={GROUP}",
            "sources": "/sources",
            "source": f"/source?group={GROUP}&file={quote(SOURCE)}",
            "health": "/health",
            "quality": "/quality",
        }
        with uf.browser() as browser:
            context = browser.new_context(viewport={"width": 1280, "height": 860})
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            for name, path in views.items():
                answer = page.goto(origin + path, wait_until="load")
                if answer is None or answer.status != 200:
                    raise SystemExit(f"{path}: {answer and answer.status}")
                target = out / f"ui-{name}.png"
                if name == "entity":
                    # From the top of the page to the bottom of the drawn graph.
                    page.wait_for_selector("#graph svg g.node")
                    box = page.locator("#graph").bounding_box()
                    assert box is not None
                    bottom = box["y"] + box["height"] + 16
                    clip = {"x": 0, "y": 0, "width": 1280, "height": bottom}
                    page.screenshot(path=str(target), full_page=True, clip=clip)
                else:
                    page.screenshot(path=str(target))
                written.append(target)
            context.close()
            if errors:
                raise SystemExit(f"the pages logged errors: {errors}")
    finally:
        uf.stop_ui(ui)
    return written


def _wait_gone(sock: Path) -> None:
    """Wait (up to 60 s) for the closed service to remove its socket as it exits."""
    deadline = time.monotonic() + 60
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    """Build the demo workspace, take the screenshots, print their paths."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    parser.add_argument(
        "--embedder", default=None, help="LCG_EMBEDDER for the demo (default: lcg's default)"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = _env(args.embedder)
    ws = Path(tempfile.mkdtemp(prefix="lcg-shots-", dir="/tmp"))
    sock = ws / ".lcg" / "service.sock"
    try:
        _lcg(ws, env, "demo", "--workspace", str(ws), "-s")
        _lcg(ws, env, "eval", "run", "--size", "small", "--backend", "scripted")
        for path in _shoot(args.out, ws, env):
            print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
    finally:
        if sock.exists():
            try:
                with Client(sock, timeout=60) as client:
                    client.call("knowledge_close", {})
                _wait_gone(sock)
            except Exception as exc:  # noqa: BLE001 - say it, and still remove the folder
                print(f"could not stop the demo's service: {exc}", file=sys.stderr)
        shutil.rmtree(ws, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
