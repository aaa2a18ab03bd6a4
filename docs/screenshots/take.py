"""Take the screenshots of docs/howto-search.md from a running demo.

    ./scripts/demo &                      # http://localhost:8080/Plone
    pip install playwright                # its driver; no browser download
    apt-get install chromium              # Debian's, or set CHROMIUM
    python docs/screenshots/take.py [http://localhost:8080/Plone]

Headless Chromium opens the search page as Anonymous, with the filter
open, and a search for a misspelt word; the PNGs are written next to this
file.
"""

from __future__ import annotations

from pathlib import Path
from playwright.sync_api import sync_playwright

import os
import sys


HERE = Path(__file__).resolve().parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# As the machine's closed network wants it: no calls home, no sandbox as root
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def main(site: str = "http://localhost:8080/Plone") -> int:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1200, "height": 860})
        page.goto(f"{site}/@@search?SearchableText=catalog")
        page.click("#search-filter-toggle")
        page.wait_for_selector("#search-filter .dropdown-menu.show")
        page.screenshot(path=HERE / "search-page.png")
        page.goto(f"{site}/@@search?SearchableText=postgress")
        page.wait_for_selector(".pgcatalog-suggestion")
        page.screenshot(path=HERE / "did-you-mean.png", clip={"x": 0, "y": 0, "width": 1200, "height": 560})
        browser.close()
    print(f"written: {HERE}/search-page.png, {HERE}/did-you-mean.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
