"""Screenshots of the catalog's ZMI tabs, for the docs (``docs/zmi/*.png``).

Run the demo (``./scripts/demo --port 8091``), then, with Playwright for
Python and a Chromium (Debian's ``chromium`` package) installed::

    python docs/zmi/screenshots.py http://localhost:8091/Plone

It logs in as admin / admin, runs a few searches so that the query report
has something to show, and writes one PNG per tab next to this file.
"""

from pathlib import Path
from playwright.sync_api import sync_playwright

import base64
import shutil
import sys


TABS = {
    "catalog": "manage_catalogView?path=/Plone/pgcatalog-news",
    "record": None,  # the first record listed on the Catalog tab
    "indexes": "manage_catalogIndexes",
    "metadata": "manage_catalogSchema",
    "advanced": "manage_catalogVerify",
    "report": "manage_catalogReport?explain=0",
}


def main(site: str) -> None:
    here = Path(__file__).parent
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        # Plone answers an anonymous request with its login form, not a
        # challenge: the credentials go with every request
        token = base64.b64encode(b"admin:admin").decode()
        page = browser.new_page(
            extra_http_headers={"Authorization": f"Basic {token}"}, viewport={"width": 1280, "height": 860}
        )
        for query in ("@@search?SearchableText=catalog", "news", "events", "pgcatalog-docs/folder_contents"):
            page.goto(f"{site}/{query}")
        catalog = f"{site}/portal_catalog"
        for name, tab in TABS.items():
            if tab is None:
                page.goto(f"{catalog}/{TABS['catalog']}")
                page.locator("table a").first.click()
            else:
                page.goto(f"{catalog}/{tab}")
            page.screenshot(path=str(here / f"{name}.png"), full_page=True)
            print(f"wrote {name}.png")
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://localhost:8091/Plone")
