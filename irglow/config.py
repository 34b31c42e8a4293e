"""Configuration files (TOML or YAML) with ``--set section.key=value`` overrides, and run manifests."""

from __future__ import annotations

import ast
import functools
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from irglow.settings import check_settings  # noqa: F401 (the one unknown-key check, re-exported)
from irglow.settings import check_fields
from irglow.utils.atomic import atomic_write_text
from irglow.utils.distributed import current
from irglow.utils.plugins import dist_key, distributions


SHIPPED = Path(__file__).parent / "configs"  # the configurations irglow ships, package data


def config_path(path: str | Path) -> Path:
    """A configuration file as a user names it: the path itself where it exists, else irglow's shipped file of that
    name — ``configs/demo.toml`` or ``demo.toml`` — so ``irglow run`` finds its default from any folder, installed
    or in the clone.  Neither: ``FileNotFoundError`` listing the shipped ones."""
    given = Path(path)
    if given.is_file():
        return given
    shipped_here = None
    if not given.is_absolute():
        inside = Path(*given.parts[1:]) if given.parts[:1] == ("configs",) else given
        shipped_here = SHIPPED / inside
        if shipped_here.is_file():
            return shipped_here
    for folder in (given, shipped_here):  # `--config out` (a run folder), `--config configs` (irglow's own)
        if folder is not None and folder.is_dir():
            raise IsADirectoryError(f"configuration {path} is a folder, not a file: {_folder_hint(folder)}")
    shipped = ", ".join(str(p.relative_to(SHIPPED)) for p in sorted(SHIPPED.glob("*.*")))
    raise FileNotFoundError(f"configuration {path} does not exist (irglow ships {shipped}: name one as "
                            f"configs/<name>)")


def _folder_hint(folder: Path) -> str:
    inside = sorted(p.name for p in folder.iterdir() if p.suffix in (".toml", ".yaml", ".yml") and p.is_file())
    if inside:
        return f"name a file in it ({', '.join(inside[:6])}{' …' if len(inside) > 6 else ''})"
    return "it holds no .toml or .yaml file" + ("; an output folder's settings are in its manifest.json, and "
                                                "Experiment.save writes a file Experiment.load reads"
                                                if (folder / "manifest.json").is_file() else "")


def load_config(path: str | Path | None, overrides: Sequence[str] = (), _chain: tuple[Path, ...] = ()
                ) -> dict[str, Any]:
    """A TOML/YAML configuration with ``--set`` overrides.  ``base = "other.toml"`` starts from another
    file, and a section's ``config = "…"`` from that file's section; both paths are relative to the file
    that names them (a path that only exists from the working folder is still accepted)."""
    config: dict[str, Any] = {}
    if path:
        path = config_path(path)
        if path.resolve() in _chain:
            cycle = " → ".join(str(p) for p in (*_chain, path.resolve()))
            raise ValueError(f"{path}: 'base' files form a cycle: {cycle}")
        try:
            if path.suffix == ".toml":
                import tomllib

                config = tomllib.loads(path.read_text(encoding="utf-8"))
            elif path.suffix in (".yaml", ".yml"):
                import yaml

                config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            else:
                raise ValueError(f"{path}: configuration must be .toml or .yaml")
        except Exception as e:  # tomllib.TOMLDecodeError, yaml.YAMLError: say which file
            if str(e).startswith(str(path)):
                raise
            raise ValueError(f"{path}: not valid {path.suffix[1:].upper()}: {e}") from None
        if not isinstance(config, dict):
            raise ValueError(f"{path}: a configuration must be a table of settings, not {type(config).__name__}")
        _resolve_paths(config, path.parent)
        if "base" in config:  # a file that changes another: base = "msmarco.toml"
            base = config.pop("base")
            config = merged(load_config(base, (), (*_chain, path.resolve())), config)
    for item in overrides:
        apply_override(config, item)
    return include_sections(config)


def include_sections(config: dict[str, Any]) -> dict[str, Any]:
    """Each table with a ``config = "file"`` key laid on that file's table of its name — ``[glow] config =
    "glow-paper.toml"`` starts from that file's ``[glow]``, ``[rerank.monobert] config = "rerank.toml"`` from its
    ``[monobert]`` — when the configuration is loaded (after ``--set``), so binding reads one complete
    configuration and no file."""
    for name, table in list(config.items()):
        if not isinstance(table, dict):
            continue
        for sub, inner in list(table.items()):
            if isinstance(inner, dict) and isinstance(inner.get("config"), str):
                table[sub] = _included(inner, sub)
        if isinstance(table.get("config"), str):
            config[name] = _included(table, name)
    return config


def _included(table: dict[str, Any], name: str) -> dict[str, Any]:
    return merged(load_config(table["config"]).get(name, {}), {k: v for k, v in table.items() if k != "config"})


class SealedConfig(dict):
    """A configuration that refuses to be read once :meth:`seal` ed.  ``irglow run`` (and the grid, zero-shot and
    ``Experiment.run``) bind it into a :class:`~irglow.plan.Plan`, then seal it: a module that read a setting from
    the dictionary instead of its bound settings object, or kept one of its tables, would stop with this error, not
    run on a default.  Nested tables (in lists too) share the seal; a deep copy taken while binding is a plain
    snapshot (what a settings object may hold)."""

    def __init__(self, data: Any = (), _state: dict | None = None):
        self._state = _state if _state is not None else {"sealed": False}
        super().__init__({k: self._wrap(v) for k, v in dict(data).items()})

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, dict):
            return value if isinstance(value, SealedConfig) else SealedConfig(value, self._state)
        if isinstance(value, list):
            return [self._wrap(v) for v in value]
        return value

    def seal(self) -> None:
        self._state["sealed"] = True

    def _read(self) -> None:
        if self._state["sealed"]:
            raise RuntimeError("the configuration was read after it was bound: a stage or tool takes its settings "
                               "from the plan (irglow.plan), never from the dictionary")

    def __getitem__(self, key):
        self._read()
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._read()
        return super().get(key, default)

    def __contains__(self, key) -> bool:
        self._read()
        return super().__contains__(key)

    def __iter__(self):
        self._read()
        return super().__iter__()

    def __len__(self) -> int:
        self._read()
        return super().__len__()

    def keys(self):
        self._read()
        return super().keys()

    def items(self):
        self._read()
        return super().items()

    def values(self):
        self._read()
        return super().values()

    def setdefault(self, key, default=None):
        self._read()
        return super().setdefault(key, self._wrap(default))

    def __setitem__(self, key, value) -> None:
        self._read()
        super().__setitem__(key, self._wrap(value))

    def pop(self, key, *default):
        self._read()
        return super().pop(key, *default)

    def copy(self) -> dict:
        self._read()
        return dict(super().items())

    def __deepcopy__(self, memo) -> dict:
        import copy

        self._read()
        return {k: copy.deepcopy(v, memo) for k, v in super().items()}

    def __reduce__(self):  # pickled (torchrun, multiprocessing): a plain dict of what it holds
        self._read()
        return dict, (dict(super().items()),)


def _relative_to(value: str, folder: Path) -> str:
    beside = folder / value
    return str(beside) if beside.exists() or not Path(value).exists() else value


def _resolve_paths(node: dict[str, Any], folder: Path) -> None:
    """``base`` and every section's ``config`` path, relative to the file they are written in."""
    for key, value in node.items():
        if key in ("base", "config") and isinstance(value, str):
            node[key] = _relative_to(value, folder)
        elif isinstance(value, dict):
            _resolve_paths(value, folder)


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base``, tables merged key by key (a section may start from another file's)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def as_names(value: Any) -> list[str]:
    """A list of names, or a comma-separated string as ``make … VARIANTS=a,b`` and ``--set`` pass one."""
    return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else list(value)


def flag(config: dict[str, Any], section: str, key: str = "enabled", default: bool = False) -> bool:
    """A true/false setting read strictly: ``enabled = "false"`` or ``--set twbert.enabled=no`` is an error
    naming the key, never a non-empty string that Python would take as true."""
    node = config.get(section, {})
    value = node.get(key, default) if isinstance(node, dict) else default
    if not isinstance(value, bool):
        raise ValueError(f"{section}.{key} = {value!r} must be true or false (a boolean, not a string)")
    return value


def check_values(obj: Any, section: str) -> Any:
    """Check a settings dataclass's values against its fields' declarations (:func:`irglow.settings.setting`:
    type, range or choices, whether unset is allowed), before any work.

    A config file is not restricted like the CLI: ``k1 = "0.9"``, ``epochs = 1.5`` or ``lr = nan`` would
    otherwise surface as a traceback deep in torch or Java, or not at all."""
    return check_fields(obj, section)


def _parse_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def apply_override(config: dict[str, Any], item: str) -> None:
    """``"lexical.depth=100"`` → ``config["lexical"]["depth"] = 100`` (values parsed as Python literals)."""
    key, sep, value = item.partition("=")
    if not sep:
        raise ValueError(f"override {item!r} must look like section.key=value")
    node = config
    parts = key.strip().split(".")
    if not all(parts):
        raise ValueError(f"override {item!r}: {key.strip()!r} is not a dotted key such as lexical.depth")
    for i, p in enumerate(parts[:-1]):
        node = node.setdefault(p, {})
        if not isinstance(node, dict):  # lexical.depth.x=1 where lexical.depth is a number
            raise ValueError(f"override {item!r}: {'.'.join(parts[:i + 1])} is a value ({node!r}), not a table "
                             f"of settings, so it has no key {parts[i + 1]!r}")
    node[parts[-1]] = _parse_value(value.strip())


def _version(package: str) -> str | None:
    found = _installed_versions().get(dist_key(package))
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError, version  # an .egg-info install, or none

    try:
        return version(package)
    except PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _installed_versions() -> dict[str, str]:
    """``{normalized name: version}`` of the distributions on ``sys.path``, from their ``*.dist-info`` folder names
    (one directory listing per path entry; ``importlib.metadata.version`` searches every entry per package, 30 ms
    of a 10-query command for the manifest's nine packages).  The first entry on the path wins, as for imports."""
    return {key: name[:-len(".dist-info")].partition("-")[2] for key, folder in distributions(sys.path, (".dist-info",))
            if "-" in (name := os.path.basename(folder))}


def git_commit(cwd: str | Path | None = None) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=cwd, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=cwd, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() + ("-dirty" if dirty else "")) if out.returncode == 0 else None


def _hardware() -> dict[str, Any]:
    """CPU count and, where torch is already loaded (never imported just for this), the GPUs."""
    info: dict[str, Any] = {"cpus": os.cpu_count()}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def run_manifest_path(run: str | Path) -> Path:
    """Where one command's record of the run file it wrote goes: ``x.run`` → ``x.run.manifest.json`` beside it."""
    run = Path(run)
    return run.with_name(run.name + ".manifest.json")


def write_run_manifest(run: str | Path, config: dict[str, Any], seed: int | None = None, **extra: Any) -> Path | None:
    """The record of one command's run file (``irglow search``, ``fuse``, ``rerank``, ``glow search``, ``twbert
    search``), beside it as :func:`run_manifest_path`: a folder's ``manifest.json`` is a pipeline's record (what
    ``irglow.pyterrier.transformer`` reads), and a single command writing ``-o DIR/x.run`` must not replace it.  A run
    written to standard output (``-o -``) has no record (``None``)."""
    from irglow.utils.atomic import is_stdout

    if is_stdout(run):
        return None
    return write_manifest(Path(run).parent, config, seed, record=run_manifest_path(run), run=str(run), **extra)


def write_manifest(out_dir: str | Path, config: dict[str, Any], seed: int | None = None,
                   record: Path | None = None, **extra: Any) -> Path:
    """Write ``manifest.json`` (config, versions, seed, git commit, command line) beside outputs (``record``:
    another file).  Under ``torchrun`` rank 0 writes it, with the number of processes (``world_size``)."""
    w = current()
    if not w.main:
        return record or Path(out_dir) / "manifest.json"
    if w.size > 1:
        extra.setdefault("world_size", w.size)

    manifest = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": sys.argv,
        "config": config,
        "seed": seed,
        "git_commit": git_commit(Path(__file__).parent),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hardware": _hardware(),
        "versions": {p: _version(p) for p in ("irglow", "pyserini", "torch", "transformers", "faiss-cpu",
                                               "ir-measures", "ir-datasets", "numpy", "pandas")},
        **extra,
    }
    jvm = sys.modules.get("irglow.index.jvm")  # the Java a run started, if it started one (never imported here)
    java = jvm.started() if jvm is not None else None
    if java is not None:
        manifest["java"] = {"home": str(java.home), "major": java.major, "source": java.source,
                            "start_cache": jvm.start_cache()}
    if record is not None:  # one command's run: its record beside it, never the folder's (a pipeline's) manifest
        return atomic_write_text(record, json.dumps(manifest, indent=2, default=str))
    out_dir = Path(out_dir)
    text = json.dumps(manifest, indent=2, default=str)
    # the newest record is manifest.json; every run also keeps its own under manifests/, so a
    # second run into the same folder never erases the first one's record
    stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
    atomic_write_text(out_dir / "manifests" / f"manifest-{stamp}.json", text)
    return atomic_write_text(out_dir / "manifest.json", text)
