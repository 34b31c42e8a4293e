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


def test_the_scan_takes_an_egg_and_the_listing_order_as_importlib_metadata_does(tmp_path, monkeypatch):
    """Issue 80, item 16: an egg on the path (a folder and a zip file) was not scanned ("unknown lexical system"),
    and of two dist-infos of one name in one folder irglow took the sorted first (0.10) where importlib takes the one
    the folder lists first; the key then named the other.  Both now agree with ``entry_points()`` and ``version()``."""
    import zipfile
    from importlib.metadata import entry_points, version

    egg = tmp_path / "eggy-1.0-py3.11.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[irglow.lexical]\negg = eggy_mod:E\n")
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: eggy\nVersion: 1.0\n")
    zipped = tmp_path / "zeggy-2.0-py3.11.egg"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("EGG-INFO/entry_points.txt", "[irglow.lexical]\nzegg = zeggy_mod:Z\n")
        z.writestr("EGG-INFO/PKG-INFO", "Metadata-Version: 1.1\nName: zeggy\nVersion: 2.0\n")
    site = tmp_path / "site"
    for v in ("0.9", "0.10"):
        folder = site / f"irglow_two-{v}.dist-info"
        folder.mkdir(parents=True)
        (folder / "entry_points.txt").write_text(f"[irglow.lexical]\ntwo = two_{v.replace('.', '_')}:T\n")
        (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: irglow-two\nVersion: {v}\n")
    monkeypatch.setattr(sys, "path", [str(egg), str(zipped), str(site)])
    ours = [(p.name, p.value, p.dist.name, p.dist.version) for p in plugins.registered("irglow.lexical")]
    theirs = sorted((p.name, p.value, p.dist.name, p.dist.version) for p in entry_points(group="irglow.lexical"))
    assert ours == theirs
    assert {p.name for p in plugins.registered("irglow.lexical")} == {"egg", "zegg", "two"}
    two = next(p for p in plugins.registered("irglow.lexical") if p.name == "two")
    assert two.dist.version == version("irglow-two")


def test_a_plugin_is_keyed_on_every_module_of_its_package(tmp_path, monkeypatch):
    """Issue 80, item 1: ``jmpkg.plugin:JM`` importing ``jmpkg/consts.py`` was keyed on ``plugin.py`` alone, so a λ
    edited in ``consts.py`` reused the old run.  Every module of the top-level package is in the key (and every
    module its distribution lists, here a second top-level package ``jmhelpers``)."""
    pkg, helpers = tmp_path / "jmpkg", tmp_path / "jmhelpers"
    pkg.mkdir()
    helpers.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "consts.py").write_text("LAMBDA = 0.7\n")
    (pkg / "plugin.py").write_text("from jmpkg.consts import LAMBDA\n\nclass JM:\n    pass\n")
    (helpers / "__init__.py").write_text("SMOOTH = 1\n")
    info = tmp_path / "jmpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jmpkg\nVersion: 1.0\n")
    (info / "RECORD").write_text("jmpkg/__init__.py,,\njmpkg/consts.py,,\njmpkg/plugin.py,,\n"
                                 "jmhelpers/__init__.py,,\njmpkg-1.0.dist-info/METADATA,,\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("jmpkg", "jmpkg.plugin", "jmpkg.consts", "jmhelpers"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    first = plugins.module_code("jmpkg.plugin")
    assert first["package"] == "jmpkg 1.0" and first["module"] == "jmpkg.plugin"
    (pkg / "consts.py").write_text("LAMBDA = 0.05\n")
    second = plugins.module_code("jmpkg.plugin")
    assert second["source"] != first["source"]
    (helpers / "__init__.py").write_text("SMOOTH = 2\n")
    assert plugins.module_code("jmpkg.plugin")["source"] != second["source"]
    assert plugins.module_code("jmpkg.plugin") == plugins.module_code("jmpkg.plugin")  # nothing else moves it
    # an editable install lists no module: its top_level.txt names the packages it holds
    (info / "RECORD").write_text("jmpkg-1.0.dist-info/METADATA,,\n__editable__.jmpkg-1.0.pth,,\n")
    (info / "top_level.txt").write_text("jmhelpers\njmpkg\n")
    third = plugins.module_code("jmpkg.plugin")
    (helpers / "__init__.py").write_text("SMOOTH = 3\n")
    assert plugins.module_code("jmpkg.plugin")["source"] != third["source"]


def test_a_lone_plugin_module_is_keyed_on_the_modules_loaded_from_its_folder(tmp_path, monkeypatch):
    """A plugin that is one file on the path (no package, no distribution), reading a sibling module."""
    (tmp_path / "jmlone.py").write_text("from jmlone_consts import LAMBDA\n")
    (tmp_path / "jmlone_consts.py").write_text("LAMBDA = 0.7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("jmlone", "jmlone_consts"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    first = plugins.module_code("jmlone")
    (tmp_path / "jmlone_consts.py").write_text("LAMBDA = 0.05\n")
    assert plugins.module_code("jmlone")["source"] != first["source"]
