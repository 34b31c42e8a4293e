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


def test_a_disabled_bar_iterates_counts_and_needs_no_tqdm():
    """A short command's bars are all disabled: they behave as tqdm's disabled bar does, without importing tqdm
    (40 ms of a 10-query search)."""
    import subprocess
    import sys

    with tqdm(total=3, disable=True) as bar:
        bar.update(2)
        bar.set_postfix(loss=1.0)
    assert bar.n == 2 and len(bar) == 3
    assert list(tqdm(["a", "b"], disable=True)) == ["a", "b"] and len(tqdm(["a", "b"], disable=True)) == 2
    code = ("import sys; from irglow.utils.progress import tqdm; list(tqdm(range(3), disable=True)); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tqdm'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr[-2000:]
