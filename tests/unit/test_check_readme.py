"""docs/check_readme.py (`make readme-check`): the README's table against results.md, cell by cell."""

from __future__ import annotations

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location("check_readme", Path(__file__).parents[2] / "docs" / "check_readme.py")
check_readme = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_readme)

TABLE = ["|      | nDCG@10 | AP |", "|:-----|:--------|:---|", "| bm25 | 0.7133  | 0.5579 |", "| glow | 0.6969 | 0.3818 ▼ |"]


def test_equal_tables_pass_and_each_difference_is_named(tmp_path, capsys):
    readme = tmp_path / "README.md"
    results = tmp_path / "results.md"
    readme.write_text("# x\n\nWhat `make run` printed (…):\n\n" + "\n".join(TABLE) + "\n\nprose\n")
    results.write_text("\n".join(TABLE) + "\n\n60 queries.\n")
    assert check_readme.main(["--readme", str(readme), "--results", str(results)]) == 0
    changed = [*TABLE[:3], "| glow | 0.6898 | 0.3818 ▼ |", "| bert | 0.6 | 0.3 |"]
    results.write_text("\n".join(changed) + "\n")
    assert check_readme.main(["--readme", str(readme), "--results", str(results)]) == 1
    err = capsys.readouterr().err
    assert "glow / nDCG@10: README 0.6969, results.md 0.6898" in err and "row bert: in results.md" in err
