"""irglow's own scan of the entry points other packages register, against ``importlib.metadata``'s."""

import sys

from irglow.utils import plugins


def test_the_scan_finds_what_importlib_metadata_finds(tmp_path, monkeypatch):
    """Two sites: a dist-info and an egg-info with irglow groups (a comment, an extra, spaces), a distribution
    shadowed by the same name earlier on the path, and a package registering other groups only."""
    first, second = tmp_path / "a", tmp_path / "b"
    for folder, text in [
        (first / "irglow_one-1.0.dist-info", "[console_scripts]\nx = y:z\n\n[irglow.lexical]\n# a comment\n"
                                             "jm = jm_system:JM\nbm = bm_mod:BM [extra]\n"),
        (first / "other-2.0.dist-info", "[console_scripts]\nother = other:main\n"),
        (second / "irglow_one-0.9.dist-info", "[irglow.lexical]\nold = old:OLD\n"),  # shadowed by 1.0
        (second / "two.egg-info", "[irglow.stages]\n  echo  =  echo_stage:Echo\n"),
    ]:
        folder.mkdir(parents=True)
        (folder / "entry_points.txt").write_text(text)
        name = folder.name.split("-")[0].split(".")[0]
        (folder / "METADATA" if folder.suffix == ".dist-info" else folder / "PKG-INFO").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 1\n")
    monkeypatch.setattr(sys, "path", [str(first), str(second)])
    from importlib.metadata import entry_points

    for group in ("irglow.lexical", "irglow.stages", "irglow.rerankers"):
        ours = [(p.name, p.value, p.group, p.dist.name) for p in plugins.registered(group)]
        theirs = sorted((p.name, p.value, p.group, p.dist.name) for p in entry_points(group=group))
        assert ours == theirs
    assert [p.name for p in plugins.registered("irglow.lexical")] == ["bm", "jm"]
    assert plugins.registered("irglow.lexical")[1].module == "jm_system"
