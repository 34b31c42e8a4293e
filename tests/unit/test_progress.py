"""Progress bars (irglow.utils.progress): frames on a terminal, plain lines in a redirected log."""

import io

from irglow.utils.progress import tqdm


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_redirected_log_gets_lines_not_frames():
    log = io.StringIO()
    for _ in tqdm(range(1000), desc="work", file=log):
        pass
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert 2 <= len(lines) <= 3 and lines[0].startswith("work:   0%") and "1000/1000" in lines[-1]


def test_a_terminal_gets_the_live_bar():
    screen = _Terminal()
    for _ in tqdm(range(10), desc="work", file=screen, mininterval=0):
        pass
    assert "\r" in screen.getvalue()


def test_a_disabled_bar_writes_nothing():
    log = io.StringIO()
    for _ in tqdm(range(10), file=log, disable=True):
        pass
    assert log.getvalue() == ""
