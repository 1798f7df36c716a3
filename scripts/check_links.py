"""Crawl the built documentation in headless Chromium and report broken internal links.

Usage (after ``scripts/build_docs.sh``)::

    python scripts/check_links.py                          # docs/_build/html
    python scripts/check_links.py --screenshot shot.png    # + a screenshot of one page

The site is served on 127.0.0.1 only. Every internal page reachable from ``index.html`` is
loaded in headless Chromium (``--dump-dom``, so the page's scripts have run and its images
and style sheets have been requested); the script then checks

* every internal ``<a href>`` points to a page that exists and, with a ``#fragment``, to an
  element of that page with that id (or name);
* every resource the browser requested while rendering a page (images, CSS, JS, fonts)
  was served (HTTP status < 400): an image that fails to load is reported with its page;
* every ``<img>`` on a page points to a served file, and every notebook page
  (``--figure-pages``, default ``notebooks/``) shows at least one figure.

Links to other hosts are listed but not followed (no network access is needed or used;
Chromium is told to resolve no host but the loopback one). Exits 1 on any problem.
Needs only the standard library and a Chromium binary (``chromium``,
``chromium-browser``, ``google-chrome``; or ``--chromium PATH``).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

ROOT = Path(__file__).resolve().parents[1]

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    # Never leave the machine: every host but the loopback one fails to resolve.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


# ----------------------------------------------------------------------------- server
class _Handler(http.server.SimpleHTTPRequestHandler):
    """Static files; records (path, status, referer) of every request."""

    log_lock = threading.Lock()
    requests: ClassVar[list[tuple[str, int, str]]] = []

    def log_request(self, code="-", size="-"):
        status = code.value if hasattr(code, "value") else int(code) if code != "-" else 0
        with self.log_lock:
            self.requests.append((self.path, status, self.headers.get("Referer", "")))

    def log_message(self, format, *args):
        pass


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Start a server for ``directory`` on a free loopback port, in a daemon thread."""
    handler = functools.partial(_Handler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


# ----------------------------------------------------------------------------- parsing
class _PageParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag == "img" and a.get("src"):
            self.images.append(a["src"])


def parse(html: str) -> _PageParser:
    """Ids, links and image sources of an HTML document."""
    p = _PageParser()
    p.feed(html)
    return p


# ----------------------------------------------------------------------------- browser
def find_chromium(explicit: str | None) -> str:
    """Path of a Chromium binary, or exit with advice."""
    for name in ([explicit] if explicit else []) + [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]:
        path = shutil.which(name) if name else None
        if path:
            return path
    sys.exit("check_links: no Chromium found (apt-get install chromium, or --chromium PATH)")


def dump_dom(chromium: str, url: str, profile: Path, timeout: float) -> str:
    """Load ``url`` headless and return the DOM after the load event and scripts."""
    cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0 or "<html" not in out.stdout.lower():
        raise RuntimeError(f"chromium failed on {url}: {out.stderr.strip()[-500:]}")
    return out.stdout


def screenshot(chromium: str, url: str, path: Path, profile: Path, size: str) -> None:
    """Write a PNG screenshot of ``url``."""
    cmd = [
        chromium,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        f"--window-size={size}",
        "--run-all-compositor-stages-before-draw",
        "--virtual-time-budget=5000",
        f"--screenshot={path}",
        url,
    ]
    subprocess.run(cmd, capture_output=True, timeout=120, check=True)


# ----------------------------------------------------------------------------- crawl
def is_page(path: str) -> bool:
    """Whether a URL path is an HTML page (crawled) rather than a file."""
    return path.endswith("/") or path.endswith(".html")


def canonical(url: str) -> str:
    """Strip the fragment and map ``.../`` to ``.../index.html``."""
    url = urldefrag(url)[0]
    return url + "index.html" if url.endswith("/") else url


def main(argv=None) -> int:
    """Crawl, check, report; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", type=Path, default=ROOT / "docs" / "_build" / "html")
    parser.add_argument("--chromium", help="Chromium binary")
    parser.add_argument("--jobs", type=int, default=2, help="browsers at a time")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per page")
    parser.add_argument(
        "--figure-pages",
        default="notebooks/",
        help="pages under this prefix must show at least one image ('' to skip)",
    )
    parser.add_argument("--screenshot", type=Path, help="write a PNG screenshot here")
    parser.add_argument("--screenshot-page", default="notebooks/01_quickstart.html")
    parser.add_argument("--window-size", default="1280,2400")
    args = parser.parse_args(argv)

    site = args.site.resolve()
    if not (site / "index.html").is_file():
        sys.exit(f"check_links: {site}/index.html not found; build the docs first")
    chromium = find_chromium(args.chromium)
    server, base = serve(site)
    start = time.perf_counter()
    problems: list[str] = []
    pages: dict[str, _PageParser] = {}
    external: set[str] = set()
    internal_links: list[tuple[str, str]] = []  # (page, absolute href)

    with tempfile.TemporaryDirectory(prefix="edp-chromium-") as tmp:
        profiles = [Path(tmp) / f"profile{i}" for i in range(max(1, args.jobs))]
        free = list(profiles)
        lock = threading.Lock()

        def visit(url: str) -> tuple[str, str | Exception]:
            with lock:
                profile = free.pop()
            try:
                return url, dump_dom(chromium, url, profile, args.timeout)
            except Exception as err:
                return url, err
            finally:
                with lock:
                    free.append(profile)

        queue = [base + "index.html"]
        seen = set(queue)
        with ThreadPoolExecutor(max_workers=len(profiles)) as pool:
            while queue:
                batch, queue = queue, []
                for url, dom in pool.map(visit, batch):
                    rel = url[len(base) :]
                    if isinstance(dom, Exception):
                        problems.append(f"{rel}: page did not load: {dom}")
                        continue
                    page = parse(dom)
                    pages[rel] = page
                    for href in page.links:
                        absolute = urljoin(url, href)
                        parts = urlsplit(absolute)
                        if parts.scheme in ("mailto", "javascript", "data"):
                            continue
                        if not absolute.startswith(base):
                            external.add(absolute)
                            continue
                        internal_links.append((rel, absolute))
                        target = canonical(absolute)
                        if is_page(urlsplit(target).path) and target not in seen:
                            if (site / unquote(target[len(base) :])).is_file():
                                seen.add(target)
                                queue.append(target)

        if args.screenshot:
            shot_url = base + args.screenshot_page
            screenshot(
                chromium, shot_url, args.screenshot.resolve(), profiles[0], args.window_size
            )

    server.shutdown()

    # 1. links and anchors
    for rel, absolute in internal_links:
        target, fragment = urldefrag(absolute)
        target = canonical(target)
        path = unquote(target[len(base) :])
        if not (site / path).is_file():
            problems.append(f"{rel}: broken link -> {absolute[len(base) :]}")
            continue
        if fragment and is_page(path):
            ids = pages[path].ids if path in pages else parse((site / path).read_text()).ids
            if unquote(fragment) not in ids:
                problems.append(f"{rel}: missing anchor -> {absolute[len(base) :]}")

    # 2. every resource requested while rendering (images, css, js, fonts) was served
    failed = defaultdict(set)
    for path, status, referer in _Handler.requests:
        if path == "/favicon.ico":  # asked for by the browser itself, not by the site
            continue
        if status >= 400:
            failed[referer[len(base) :] if referer.startswith(base) else referer].add(
                f"{path} ({status})"
            )
    for page, items in sorted(failed.items()):
        problems.append(f"{page or '(no referer)'}: failed to load {', '.join(sorted(items))}")

    # 3. images on every page exist; notebook pages show figures
    n_images = 0
    for rel, page in sorted(pages.items()):
        for src in page.images:
            if src.startswith("data:"):
                n_images += 1
                continue
            absolute = urljoin(base + rel, src)
            if not absolute.startswith(base):
                problems.append(f"{rel}: image from another host {src}")
                continue
            n_images += 1
            if not (site / unquote(urlsplit(absolute).path.lstrip("/"))).is_file():
                problems.append(f"{rel}: missing image {src}")
        if args.figure_pages and rel.startswith(args.figure_pages) and not page.images:
            problems.append(f"{rel}: shows no figure")

    elapsed = time.perf_counter() - start
    n_anchor = sum(1 for _, a in internal_links if urldefrag(a)[1])
    print(
        f"check_links: {len(pages)} pages, {len(internal_links)} internal links "
        f"({n_anchor} with anchors), {n_images} images, {len(_Handler.requests)} requests, "
        f"{len(external)} external links (not followed) in {elapsed:.1f} s"
    )
    if args.screenshot:
        print(f"check_links: screenshot of {args.screenshot_page} -> {args.screenshot}")
    for p in problems:
        print("  PROBLEM", p)
    if problems:
        print(f"check_links: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("check_links: no broken internal links, anchors or images")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LANG", "C.UTF-8")
    sys.exit(main())
