"""A griffe extension for the API reference (``mkdocs.yml``: ``extensions``): irglow's docstrings as the reference
renders them, without a second copy of them in the code.

- **Cross-references that link.** A Sphinx role (``:class:`Ranker```, ``:func:`~irglow.plan.bind_plan```) is
  resolved against the loaded package — the name as written, then from the docstring's class, module and parent
  packages — and becomes an autorefs link ``[`Ranker`][irglow.rankers.Ranker]`` when its target has a page here;
  otherwise the name in code font. No role is printed raw.
- **A parameter table for every signature.** A function, method or class (its ``__init__`` merged into it) whose
  docstring has no ``Args:`` section gets one written from its signature: each parameter with its annotation and
  default (rendered by mkdocstrings), described by the docstring's own sentence that names it in code font, or, for
  a dataclass's field, by its declaration (``setting(default, "meaning")``) or the comment at the end of its line.
- An override without a docstring shows its base class's (as Sphinx's autodoc does); a field without one, its
  declaration's meaning or its line comment.
- reST's ``::`` before an indented example becomes ``:`` (the block is code in Markdown already).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

SECTION = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$", re.M)


def _gen_pages():
    """docs/gen_pages.py, loaded under its own name (so it does not write pages): its module list and role pattern."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("gen_pages", Path(__file__).with_name("gen_pages.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PAGES = _gen_pages()
DOCUMENTED: tuple[str, ...] = tuple(_PAGES.API_MODULES)  # the modules with a page
ROLE = _PAGES.SPHINX_ROLE


def _sentences(text: str) -> list[str]:
    flat = re.sub(r"\s+", " ", text)
    return [s.strip() for s in re.split(r"(?<=[.;])\s+(?=[A-Z`(*])", flat) if s.strip()]


def _described(name: str, text: str) -> str:
    """The first sentence of ``text`` that names ``name`` in code font (trimmed), else a dash."""
    mark = re.compile(rf"``?{re.escape(name)}(?:[=`(.\[ ]|``)")
    for sentence in _sentences(text):
        if mark.search(sentence):
            return sentence if len(sentence) <= 240 else sentence[:237].rsplit(" ", 1)[0] + " …"
    return "—"


class IrglowDocstrings(griffe.Extension):
    """Rewrites every docstring of the loaded package once it is loaded (roles need the whole package)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        griffe.DataclassesExtension().on_package(pkg=pkg, **kwargs)  # dataclasses' __init__ first (it runs after us)
        for obj in _walk(pkg):
            if obj.docstring is None and obj.parent is not None and obj.parent.is_class:
                obj.docstring = _inherited(obj)
            if obj.docstring is None and obj.is_attribute and obj.parent is not None:
                # a module constant's line comment; a field's declaration, line comment or class's Args entry
                said = _comment(obj) if obj.parent.is_module else _declared_doc(obj.parent, obj.name)
                if said == "—" and obj.parent.is_class:
                    said = _arg_of(obj.parent, obj.name)
                if said != "—":
                    obj.docstring = griffe.Docstring(said, parent=obj, parser=griffe.Parser.google)
            if obj.docstring is not None:
                obj.docstring.value = self._rewrite(obj, obj.docstring.value, pkg)
            if obj.is_function or obj.is_class:
                self._parameters(obj)

    # --- roles -------------------------------------------------------------------------------------------------
    def _rewrite(self, obj: griffe.Object, text: str, pkg: griffe.Module) -> str:
        text = re.sub(r"::\n", ":\n", text)

        def link(match: re.Match) -> str:
            short, target = match.group(1), match.group(2).strip()
            target = target.removesuffix("()")
            shown = target.rsplit(".", 1)[-1] if short or "." not in target else target
            found = _resolve(obj, target, pkg)
            return f"[`{shown}`][{found}]" if found else f"`{shown}`"

        return ROLE.sub(link, text)

    # --- parameters --------------------------------------------------------------------------------------------
    def _parameters(self, obj: griffe.Object) -> None:
        if obj.is_function and obj.name == "__init__":
            return  # merged into its class's table (merge_init_into_class)
        function = obj if obj.is_function else obj.members.get("__init__")
        try:
            signature = obj.parameters  # a class's: its __init__'s, a dataclass's generated one included
        except Exception:  # noqa: BLE001 - a class griffe finds no constructor for
            return
        params = [p for p in signature if p.name not in ("self", "cls") and not p.name.startswith("_")]
        if not params:
            return
        text = obj.docstring.value if obj.docstring else ""
        if SECTION.search(text):
            return
        init = function.docstring.value if obj.is_class and function is not None and function.docstring else ""
        prose = text + "\n" + init
        module = obj.module.docstring.value if obj.module.docstring else ""  # a module may describe its one class
        lines = ["", "Args:"]
        for p in params:
            name = ("*" if p.kind == griffe.ParameterKind.var_positional else
                    "**" if p.kind == griffe.ParameterKind.var_keyword else "") + p.name
            said = _described(p.name, prose)
            if said == "—" and obj.is_class:
                said = _declared_doc(obj, p.name)
            lines.append(f"    {name}: {said if said != '—' or obj.is_function else _described(p.name, module)}")
        block = "\n".join(lines)
        if obj.docstring is None:  # (the value set after: the constructor would dedent the table's lines)
            obj.docstring = griffe.Docstring("", parent=obj, parser=griffe.Parser.google)
            obj.docstring.value = block.strip("\n")
        else:
            obj.docstring.value = text.rstrip() + "\n" + block


def _declared_doc(cls: griffe.Object, name: str) -> str:
    """A settings dataclass's field declared as ``setting(default, "meaning", …)`` (irglow.settings): its meaning, the
    one declaration the settings reference prints too; else a dash."""
    import ast

    member = cls.members.get(name)
    if member is None or member.is_alias or not member.is_attribute:
        return "—"
    try:
        call = ast.parse(str(member.value), mode="eval").body if member.value is not None else None
    except SyntaxError:
        call = None
    if not isinstance(call, ast.Call) or getattr(call.func, "id", getattr(call.func, "attr", "")) != "setting":
        return _comment(member)
    docs = [k.value for k in call.keywords if k.arg == "doc"] + call.args[1:2]
    return _sentence(docs[0].value if docs and isinstance(docs[0], ast.Constant) and isinstance(docs[0].value, str)
                     else "")


def _arg_of(cls: griffe.Object, name: str) -> str:
    """What the class's ``Args:`` section says of ``name`` (its constructor's parameter: a dataclass's field), else a
    dash."""
    text = cls.docstring.value if cls.docstring else ""
    found = SECTION.search(text)
    if not found:
        return "—"
    import itertools

    lines = text[found.end():].lstrip("\n").split("\n")
    for i, line in enumerate(itertools.takewhile(str.strip, lines)):  # the section: up to its first blank line
        entry = re.match(rf"^\s+\*{{0,2}}{re.escape(name)}(?:\s*\([^)]*\))?:\s*(.*)$", line)
        if entry and entry.group(1).strip() not in ("", "—"):
            more = itertools.takewhile(lambda ln: re.match(r"^\s{8,}\S", ln), lines[i + 1:])  # its next lines
            return " ".join([entry.group(1).strip(), *(ln.strip() for ln in more)])
    return "—"


def _comment(member: griffe.Object) -> str:
    """A field's own comment, written at the end of its line (``seed: int | None = None  # the experiment's seed``),
    as a sentence; else a dash."""
    import io
    import tokenize

    try:
        lines = member.lines  # the field's source lines
    except Exception:  # noqa: BLE001 - no source (a built-in, a generated member)
        return "—"
    try:
        comments = [t.string for t in tokenize.generate_tokens(io.StringIO("\n".join(lines).strip() + "\n").readline)
                    if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return "—"
    return _sentence(" ".join(c.lstrip("#").strip() for c in comments
                              if not c.lstrip("#").strip().startswith(("noqa", "type:"))))


def _sentence(text: str) -> str:
    """``text`` as a sentence (a capital, a full stop); a dash where it is empty."""
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".") if text else "—"


def _inherited(obj: griffe.Object) -> "griffe.Docstring | None":
    """An override's docstring from the nearest base class that documents the member (as Sphinx's autodoc does)."""
    try:
        bases = obj.parent.mro()
    except Exception:  # noqa: BLE001 - a base griffe cannot resolve (outside the package)
        return None
    for base in bases:
        member = base.members.get(obj.name)
        if member is not None and not member.is_alias and member.docstring is not None:
            doc = griffe.Docstring("", parent=obj, parser=member.docstring.parser,
                                   parser_options=member.docstring.parser_options)
            doc.value = member.docstring.value
            return doc
    return None


def _walk(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_module or member.is_class or member.is_function or member.is_attribute:
            yield from _walk(member) if (member.is_module or member.is_class) else (member,)


def _page_of(path: str) -> bool:
    """An object the reference renders: public, in a module that has a page."""
    return any(path == m or path.startswith(m + ".") for m in DOCUMENTED) and \
        not any(part.startswith("_") for part in path.split("."))


def _resolve(obj: griffe.Object, target: str, pkg: griffe.Module) -> str | None:
    """``target``'s full path when it has a page, trying it as written, then from each enclosing scope."""
    scopes = []
    scope = obj
    while scope is not None:
        scopes.append(scope.path)
        scope = scope.parent
    candidates = [target] + [f"{s}.{target}" for s in scopes]
    for path in candidates:
        if not path.startswith(pkg.name):
            continue
        try:
            found = _lookup(pkg, path)
        except (KeyError, ValueError):
            continue
        if found is None:
            continue
        full = found.final_target.path if found.is_alias else found.path
        return full if _page_of(full) else None
    return None


def _lookup(pkg: griffe.Module, path: str):
    parts = path.split(".")[1:]
    node: Any = pkg
    for part in parts:
        try:
            node = node.members[part]
        except (KeyError, AttributeError):
            return None
        if node.is_alias:
            try:
                node = node.final_target
            except Exception:  # noqa: BLE001 - an alias to outside the package
                return None
    return node
