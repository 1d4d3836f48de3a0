"""The guard of issue 22: outside text reaches a Textual sink (a table, `Static`, `Label`, a
border title, `notify`) only through `strixwizard.tui.text` (or a tool literal), and the plain
CLI's output only through `strixwizard.present.terminal`. An AST walk of the sources; it is shown to
fail on a module that breaks each rule."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "strixwizard"
#: Calls whose first argument a widget shows: Textual reads a `str` there as markup.
#: (`add_row` and the other table calls are TextTable's, `notify` the app's, `say` Notice's: each
#: makes any str plain itself, so it needs no wrapping; a DataTable of its own or markup= is caught.)
TEXT_SINKS = {"Static", "Label", "Checkbox", "Button", "update"}
TITLE_SINKS = {"border_title", "border_subtitle"}
#: Content built from a runtime string keeps its ESC: only `outside` spells it out.
CONTENT_CALLS = {"Content", "styled", "assemble"}
#: Where the one function lives, and the one table that applies it.
EXEMPT = {"tui/text.py", "tui/widgets/table.py"}


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _builds_a_str(node: ast.expr) -> bool:
    """An expression that makes a `str` at run time from something: an f-string with a field,
    `+`/`%` on strings, `"...".join(...)`, `str(...)`, `repr(...)`, `"...".format(...)`."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _builds_a_str(node.left) or _builds_a_str(node.right) or \
            (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)) or \
            (isinstance(node.right, ast.Constant) and isinstance(node.right.value, str))
    if isinstance(node, ast.IfExp):
        return _builds_a_str(node.body) or _builds_a_str(node.orelse)
    if isinstance(node, ast.Call):
        name = _name(node.func)
        if name in ("str", "repr", "format"):
            return True
        if name == "join" and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
            return True
    return False


def violations(source: str, where: str = "<module>") -> Iterator[str]:
    """Each place of `source` (wizard code) where outside text could reach a sink unescaped."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = _name(node.func)
            line = f"{where}:{node.lineno}"
            if name == "DataTable":
                yield f"{line}: a DataTable of its own (use TextTable: its str cells are never markup)"
            for keyword in node.keywords:
                if keyword.arg == "markup" and not (isinstance(keyword.value, ast.Constant)
                                                    and keyword.value.value is False):
                    yield f"{line}: markup= other than False"
            arguments = [*node.args, *[k.value for k in node.keywords if k.arg in (None, "label")]]
            if name in TEXT_SINKS and any(_builds_a_str(a) for a in arguments):
                yield f"{line}: {name}() of a str built at run time (wrap it in outside(...))"
            is_content = name in CONTENT_CALLS and (
                name == "Content" or (isinstance(node.func, ast.Attribute)
                and _name(node.func.value) == "Content"))
            if is_content and any(_builds_a_str(a) for a in node.args):
                yield f"{line}: Content.{name}() of a str built at run time (use outside(...))"
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr in TITLE_SINKS and (
                        _builds_a_str(node.value) or isinstance(node.value, ast.Attribute)
                        or (isinstance(node.value, ast.Name) and not node.value.id.isupper())):
                    yield (f"{where}:{node.lineno}: {target.attr} = a str (Textual reads it as "
                           "markup: give outside(...) or a literal)")


def _wizard_sources() -> Iterator[tuple[str, str]]:
    for path in sorted((ROOT / "tui").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative not in EXEMPT:
            yield relative, path.read_text()


def test_the_wizard_shows_outside_text_only_through_the_one_function() -> None:
    found = [v for where, source in _wizard_sources() for v in violations(source, where)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source", [
    "yield DataTable(id='ports')",
    "yield Static(f'{port.firmware}')",
    "self.border_title = f'node {node}'",
    "self.border_title = link.id",
    "self.border_title = title",
    "self.notify(message, markup=True)",
    "yield Static(f'[b]{self.title_text}[/b]', markup=True)",
    "notes.update('\\n'.join(lines))",
    "lines.append(Content(f'{INDENT}{observed}'))",
    "head = Content.styled(f'plan {plan.fix}', 'bold')",
    "box.update(Content.assemble(badge, f' {check.observed}'))",
    "yield Label('node ' + name)",
])
def test_the_guard_fails_on_a_module_that_breaks_the_rule(source: str) -> None:
    assert list(violations(source)), f"not caught: {source}"


@pytest.mark.parametrize("source", [
    "table.add_row(port.node, f'{port.firmware}')",  # TextTable makes each str a Text
    "self.notify(f'failed: {error}')",  # WizardApp.notify: markup=False, escaped
    "self.border_title = TITLE",  # a module's constant
    "self.border_title = outside(f'node {node}')",
    "self.border_title = 'Environment'",
    "notes.update(lines(found))",
    "yield Static('[b]Nodes[/b]', classes='section')",  # the tool's own markup
    "lines.append(outside(f'{INDENT}{observed}'))",
    "yield Static('', markup=False)",
])
def test_the_guard_lets_the_rule_pass(source: str) -> None:
    assert not list(violations(source)), source


# -- the plain CLI --------------------------------------------------------------------------------
def test_every_command_writes_through_the_visible_streams() -> None:
    """`main` runs every command inside `visible_output` (stdout too unless it carries JSON),
    and the only escape sequence the CLI writes itself is terminal.py's colour."""
    tree = ast.parse((ROOT / "cli" / "main.py").read_text())
    main = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "main")
    withs = [n for n in ast.walk(main) if isinstance(n, ast.With)]
    assert any(_name(item.context_expr.func) == "visible_output" for w in withs for item in w.items
               if isinstance(item.context_expr, ast.Call))
    for path in sorted([*(ROOT / "cli").glob("*.py"), *(ROOT / "present").rglob("*.py")]):
        text = path.read_text()
        if path.name != "terminal.py":
            assert "\\x1b" not in text and "\\033" not in text, f"{path.name} writes an escape itself"
        assert "sys.__stdout__" not in text and "sys.__stderr__" not in text, path.name
        # input() writes its prompt past sys.stdout (readline): a prompt is built with visible()
        for call in (n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)
                     and _name(n.func) == "input"):
            assert not any(_builds_a_str(a) for a in call.args), f"{path.name}:{call.lineno}"


def test_the_plain_cli_spells_out_what_a_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    from strixwizard.cli import main as cli_main

    def hostile(args: object) -> int:
        print("kernel 6.1.0\x1b[2J\x1b]52;c;cHduZWQ=\x07")
        import sys
        print("error \x9b2J", file=sys.stderr)
        return 0

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli_main, "cmd_explain", hostile)
        assert cli_main.main(["explain", "--list"]) == 0
    out, err = capsys.readouterr()
    assert out == "kernel 6.1.0\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07\n" and err == "error \\x9b2J\n"


def test_the_wizard_toasts_without_markup() -> None:
    """WizardApp.notify (which every screen's and widget's notify calls) passes markup=False."""
    tree = ast.parse((ROOT / "tui" / "app.py").read_text())
    notify = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "notify")
    calls = [c for c in ast.walk(notify) if isinstance(c, ast.Call) and _name(c.func) == "notify"]
    assert calls and all(any(k.arg == "markup" and isinstance(k.value, ast.Constant)
                             and k.value.value is False for k in c.keywords) for c in calls)
