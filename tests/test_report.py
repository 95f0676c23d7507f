"""The HTML report: self-contained (embedded PNGs, no script, nothing fetched), every section present."""
from __future__ import annotations

import base64
from html.parser import HTMLParser

import pytest

from prover_service.report import Section, Table, render

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.headings, self.images, self.rows, self.scripts, self.links = [], [], 0, 0, []
        self._in_h2 = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h2":
            self._in_h2 = True
        elif tag == "img":
            self.images.append(attrs["src"])
        elif tag == "tr":
            self.rows += 1
        elif tag == "script":
            self.scripts += 1
        elif tag in ("link", "a") or "src" in attrs and tag != "img":
            self.links.append(tag)

    def handle_endtag(self, tag):
        if tag == "h2":
            self._in_h2 = False

    def handle_data(self, data):
        if self._in_h2:
            self.headings.append(data)


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def test_render_escapes_and_embeds():
    text = render("<Report>", [Section("A & B", ["x < y"], [Table(["h<1>"], [["<td>", 1.5, 2]])], [("chart", PNG)])])
    assert "<Report>" not in text and "&lt;Report&gt;" in text and "x &lt; y" in text and "&lt;td&gt;" in text
    page = _parse(text)
    assert page.headings == ["A & B"] and page.rows == 2 and page.scripts == 0 and not page.links
    (src,) = page.images
    assert base64.b64decode(src.split(",", 1)[1]) == PNG
    with pytest.raises(ValueError, match="not a PNG"):
        render("r", [Section("s", images=[("bad", b"GIF89a")])])


@pytest.fixture(scope="module")
def report_page(bank, tmp_path_factory):
    """The report of a copy of the bank's model, written once for the tests below."""
    from bank_fixtures import copy_of_bank_model
    from prover_service.cli import main as fairproof

    root, _, store = copy_of_bank_model(bank, tmp_path_factory, "audit-report")
    store.dispose()
    out = tmp_path_factory.mktemp("report") / "report.html"
    assert fairproof(["audit", "report", "--model", str(root), "--out", str(out), "--customers", "4",
                      "--samples", "500", "--time-limit", "30", "--draws", "2000"]) == 0
    return root, out


def test_audit_report_command(report_page, capsys):
    from prover_service.cli import main as fairproof

    root, out = report_page
    page = _parse(out.read_text())
    assert page.headings == ["The model", "Certified radius (plaintext, fast)", "Selection rates by group (the test split)",
                             "Counterfactual spread", "Global discrimination search",
                             "Where it discriminates (explanations)"]
    assert len(page.images) == 3 and page.scripts == 0 and not page.links
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert page.rows >= 12
    text = out.read_text()
    assert "some individual reaches k = " in text and "BIC hill climbing" in text
    capsys.readouterr()
    code = fairproof(["audit", "report", "--model", str(root), "--out", str(out), "--customers", "0"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and "customers" in err


def test_the_report_renders_in_headless_chromium(report_page, tmp_path):
    """Chromium opens the page from disk (no network), lays out every section, table and chart, and
    screenshots it."""
    import shutil
    import subprocess

    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("chromium not installed (scripts/setup.sh installs Debian's chromium)")
    _, page = report_page
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = _parse(dom.stdout)
    assert len(rendered.headings) == 6 and len(rendered.images) == 3 and rendered.rows >= 12
    shot = tmp_path / "report.png"
    done = subprocess.run([browser, *flags, "--window-size=1200,4000", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", done.stderr[-2000:]
    assert shot.stat().st_size > 20_000  # a laid-out page, not a blank one
