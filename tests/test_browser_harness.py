"""The browser harness (tests/browser.py) on pages like the ones it is for: a self-contained Plotly page like the
report, a page that fails, and a page that follows server-sent events like the live console."""

from __future__ import annotations

import queue
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import plotly.graph_objects as go  # type: ignore[import-untyped]  # plotly ships no type information
import pytest

from browser import Chromium, JavaScriptError, NavigationError, Page, PageTimeoutError

READY = "window.seglogReady === true"
LANES = ["writer-1", "writer-2", "snapshotter"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def timeline_page(tmp_path: Path) -> Path:
    """A small timeline in the report's shape: spans of two kinds on lanes, fault markers; plotly.js embedded, so
    the page loads with no network. It sets seglogReady once Plotly has drawn."""
    fig = go.Figure([
        go.Bar(name="append", orientation="h", y=["writer-1", "writer-2", "writer-1"], x=[3, 2, 4], base=[0, 1, 5]),
        go.Bar(name="snapshot", orientation="h", y=["snapshotter"], x=[2], base=[6]),
        go.Scatter(name="fault", mode="markers", y=["writer-2"], x=[2.5], marker={"symbol": "x", "size": 12}),
    ])
    fig.update_layout(barmode="overlay", width=800, height=400)
    fig.update_yaxes(categoryorder="array", categoryarray=LANES)
    path = tmp_path / "timeline.html"
    path.write_text(fig.to_html(include_plotlyjs=True, full_html=True, post_script="window.seglogReady = true;"))
    return path


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (which must come first)."""
    data = path.read_bytes()
    assert PNG_SIGNATURE == data[:8]
    assert b"IHDR" == data[12:16]
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_a_plotly_page_shows_the_traces_and_lanes_it_was_built_with(chromium: Page, tmp_path: Path) -> None:
    """What the report's tests will do: the figure's traces and lanes as Plotly holds them and as the page draws
    them. Wrong if Plotly did not run (no CDN, embedded script broken) or the axis lost a lane."""
    chromium.open(timeline_page(tmp_path), ready=READY)

    plot = "document.querySelector('.js-plotly-plot')"
    assert ["append", "snapshot", "fault"] == chromium.evaluate(f"{plot}.data.map(trace => trace.name)")
    assert ["writer-1", "writer-2", "writer-1"] == chromium.evaluate(f"{plot}.data[0].y")
    drawn_lanes = chromium.evaluate(f"[...{plot}.querySelectorAll('.ytick text')].map(t => t.textContent)")
    assert LANES == drawn_lanes
    drawn_legend = chromium.evaluate(f"[...{plot}.querySelectorAll('.legendtext')].map(t => t.textContent)")
    assert ["append", "snapshot", "fault"] == drawn_legend
    assert 4 == chromium.evaluate(f"{plot}.querySelectorAll('.bars .point').length")
    assert [] == chromium.errors
    chromium.screenshot()


def test_script_errors_are_reported_from_page_load_on(chromium: Page, tmp_path: Path) -> None:
    """An error thrown while the page parses, an unhandled rejection and console.error all count; console.log
    does not. Wrong if a broken page could pass ``assert [] == page.errors``."""
    page = tmp_path / "broken.html"
    page.write_text("""<!doctype html><html><body><script>
console.log("starting");
console.error("ledger total mismatch", 41, 42);
Promise.reject(new Error("no run data"));
setTimeout(() => { window.seglogReady = true; });  // a task later: after the rejection is reported
drawLanes();
</script></body></html>""")
    chromium.open(page, ready=READY)

    assert [("console.error", "ledger total mismatch 41 42"),
            ("exception", "Error: no run data"),
            ("exception", "ReferenceError: drawLanes is not defined")] == sorted(
        (error.kind, error.text.splitlines()[0]) for error in chromium.errors)
    [uncaught] = [error for error in chromium.errors if "drawLanes" in error.text]
    assert (page.as_uri(), 5) == (uncaught.url, uncaught.line)  # the protocol counts lines from 0
    assert ["starting"] == [message.text for message in chromium.messages if message.kind == "console.log"]


def test_a_page_that_never_gets_ready_fails_with_its_errors(chromium: Page, tmp_path: Path) -> None:
    """The timeout names the condition and shows why: the page's exception. Wrong if a test waiting on a broken
    report hung, or failed saying only 'timeout'."""
    page = tmp_path / "never.html"
    page.write_text("<script>console.warn('no runs in file'); renderReport(); window.seglogReady = true;</script>")
    with pytest.raises(PageTimeoutError) as raised:
        chromium.open(page, ready=READY, timeout=1.0)

    message = str(raised.value)
    assert message.startswith(f"{READY!r} was not true within")
    assert "[exception] ReferenceError: renderReport is not defined" in message
    assert "[console.warning] no runs in file" in message


def test_evaluate_returns_json_values_and_raises_what_the_page_throws(chromium: Page) -> None:
    """Values come back as Python values (a promise awaited); a throwing expression raises, never returns None."""
    chromium.open("about:blank")
    assert {"lanes": ["a", "b"], "total": 1.5, "ok": True, "none": None} == chromium.evaluate(
        "({lanes: ['a', 'b'], total: 1.5, ok: true, none: null})")
    assert 3 == chromium.evaluate("Promise.resolve(3)")
    assert chromium.evaluate("undefined") is None
    with pytest.raises(JavaScriptError, match="TypeError"):
        chromium.evaluate("null.lanes")


def test_a_missing_file_is_a_navigation_error(chromium: Page, tmp_path: Path) -> None:
    """A report that was never written fails at open, not as a timeout on an error page."""
    with pytest.raises(NavigationError, match="ERR_FILE_NOT_FOUND"):
        chromium.open(tmp_path / "report.html")


def test_screenshots_are_png_files_of_the_page(chromium: Page, tmp_path: Path) -> None:
    """The whole page by default (beyond the window's 900 pixels), or a given size; a drawn plot is a picture
    with content, far larger than a blank page of the same size."""
    tall = tmp_path / "tall.html"
    tall.write_text("<body style='margin:0'><div style='height:2000px;background:linear-gradient(red,blue)'></div>")
    chromium.open(tall)
    whole = chromium.screenshot("tall")
    assert chromium.screenshot("tall").parent == whole.parent
    assert whole.name.endswith("--tall.png")
    assert (1280, 2000) == png_size(whole)

    chromium.open("about:blank")
    blank = chromium.screenshot("blank", size=(800, 400))
    chromium.open(timeline_page(tmp_path), ready=READY)
    plot = chromium.screenshot(size=(800, 400))

    assert "test_screenshots_are_png_files_of_the_page.png" == plot.name
    assert (800, 400) == png_size(plot) == png_size(blank)
    assert plot.stat().st_size > 5 * blank.stat().st_size, (plot.stat().st_size, blank.stat().st_size)


@dataclass
class EventServer:
    """A page and a server-sent-events stream on 127.0.0.1: what a test puts in ``events`` is pushed as it comes."""

    url: str
    events: queue.Queue[str | None]


PUSH_PAGE = b"""<!doctype html><html><body><ol id="events"></ol><script>
const stream = new EventSource("/events");
stream.onopen = () => { window.seglogReady = true; };
stream.onmessage = (event) => {
  const item = document.createElement("li");
  item.textContent = event.data;
  document.getElementById("events").append(item);
};
stream.addEventListener("end", () => {
  stream.close();  // or EventSource reconnects and hears it all again
  window.streamEnded = true;
});
</script></body></html>"""


@pytest.fixture
def event_server() -> Iterator[EventServer]:
    events: queue.Queue[str | None] = queue.Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/events":
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                while (data := events.get(timeout=30)) is not None:
                    self.wfile.write(f"data: {data}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"event: end\ndata: \n\n")
                return
            body = PUSH_PAGE if self.path == "/" else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the test's output is the assertions, not an access log

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield EventServer(url=f"http://127.0.0.1:{server.server_address[1]}/", events=events)
    events.put(None)
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_server_sent_events_show_on_the_page_as_they_arrive(chromium: Page, event_server: EventServer) -> None:
    """The live console's path: an http:// page whose EventSource stream pushes events one by one, each seen on
    the page before the next is sent. Wrong if the harness saw only a finished page, or events were lost or
    repeated on the way."""
    shown = "[...document.querySelectorAll('#events li')].map(item => item.textContent)"
    chromium.open(event_server.url, ready=READY)
    pushed = ["segment 1 sealed", "segment 2 sealed", "ledger: 3 appends"]
    for count, event in enumerate(pushed, start=1):
        event_server.events.put(event)
        chromium.wait_for(f"document.querySelectorAll('#events li').length === {count}")
        assert pushed[:count] == chromium.evaluate(shown)
    event_server.events.put(None)
    chromium.wait_for("window.streamEnded === true")
    assert pushed == chromium.evaluate(shown)
    assert [] == chromium.errors
    chromium.screenshot()


def test_close_leaves_no_chromium_process(chromium_binary: str) -> None:
    """A browser of its own, closed: none of its processes is left, not even as a zombie, so a suite leaves no
    chromium behind on the machine. Wrong if closing relied on the browser ending its children itself."""
    browser = Chromium(chromium_binary)
    page = browser.new_page("close")
    page.open("about:blank")
    started = browser.processes()
    assert browser.pid in started
    assert len(started) >= 3, started  # the browser, its zygote and a renderer at least: the check sees them all
    browser.close()
    assert [] == [pid for pid in started if Path(f"/proc/{pid}").exists()]
