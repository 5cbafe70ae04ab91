"""The house rules (DESIGN.md): which of our apps may import which, kept by walking every module's imports.

Every `.py` file of each app is parsed with `ast`; every import anywhere in it counts (module level, inside a
function or a class, `import x`, `from x import y`, relative imports resolved, `import_module("x")`), so a
function-level import cannot slip past. Migrations and management commands are modules like any other.
"""

import ast
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

# app -> the apps of ours it must never import
FORBIDDEN = {
    "datasets": {"studies", "analysis"},
    "raters": {"studies", "analysis"},
    "scoring": {"studies", "analysis"},
}
# These know nothing of the domain: no app of ours but `config` and each other (the engine may run jobs).
DOMAIN_FREE = ("engine", "jobs")


def our_apps() -> set[str]:
    """The top-level packages of the repository (apps and `config`), not the tests."""
    return {path.parent.name for path in REPO.glob("*/__init__.py")} - {"tests"}


def rules() -> dict[str, set[str]]:
    apps = our_apps()
    chosen = {app: set(banned) for app, banned in FORBIDDEN.items()}
    for app in DOMAIN_FREE:
        chosen[app] = apps - {*DOMAIN_FREE, "config"}
    return chosen


@dataclass(frozen=True)
class Import:
    line: int
    name: str  # the absolute dotted name imported: "studies.models.Study", "datasets.factors"


def module_name(path: Path) -> tuple[str, bool]:
    """(dotted name, is a package) of a file under the repository."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of `from <level dots><name> import ...` written in `module`."""
    if level == 0:
        return name or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: max(0, len(package) - (level - 1))]  # each dot past the first goes one package up
    return ".".join([*base, *([name] if name else [])])


def imports_in(source: str, *, module: str, is_package: bool = False) -> list[Import]:
    """Every import in a module's source, wherever it is written, as absolute names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(module, is_package, node.level, node.module)
            found += [Import(node.lineno, f"{base}.{alias.name}" if base else alias.name) for alias in node.names]
        elif isinstance(node, ast.Call) and _called_name(node.func) in ("import_module", "__import__"):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and not first.value.startswith("."):
                found.append(Import(node.lineno, first.value))
    return found


def _called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def violations_in(source: str, *, module: str, is_package: bool = False, where: str = "") -> list[str]:
    """The rule breaks of one module: "<where>:<line> imports <name> (<app> must not import <other>)"."""
    app = module.split(".")[0]
    banned = rules().get(app, set())
    return [
        f"{where or module}:{found.line} imports {found.name} ({app} must not import {found.name.split('.')[0]})"
        for found in imports_in(source, module=module, is_package=is_package)
        if found.name.split(".")[0] in banned
    ]


def app_modules(app: str) -> list[Path]:
    return sorted(path for path in (REPO / app).rglob("*.py") if "__pycache__" not in path.parts)


def test_no_app_imports_what_the_house_rules_forbid():
    problems = []
    walked = set()
    for app in rules():
        for path in app_modules(app):
            module, is_package = module_name(path)
            where = str(path.relative_to(REPO))
            problems += violations_in(path.read_text(), module=module, is_package=is_package, where=where)
            walked.add(app)
    assert set(FORBIDDEN) <= walked, "an app the rules name has no modules: its rule would pass on nothing"
    assert not problems, "House rules broken (DESIGN.md, house rules):\n" + "\n".join(problems)


def test_the_rules_cover_the_apps_that_exist():
    assert {"datasets", "raters", "scoring", "studies", "analysis", "config"} <= our_apps()
    for app in FORBIDDEN:
        assert app_modules(app), f"{app} has no modules: the rule about it would pass on nothing"


def test_a_function_level_import_is_caught():
    source = 'import os\n\n\ndef seed():\n    """Seed."""\n    from studies.demo import seed_demo_studies\n'
    assert violations_in(source, module="datasets.management.commands.seed_demo") == [
        "datasets.management.commands.seed_demo:6 imports studies.demo.seed_demo_studies "
        "(datasets must not import studies)"
    ]


def test_plain_imports_methods_and_import_module_are_caught_too():
    source = (
        "import analysis.tables\n"
        "class Panel:\n"
        "    def study(self):\n"
        "        import studies.models as m\n"
        "        return m\n"
        "def later():\n"
        "    return importlib.import_module('studies.panel')\n"
    )
    lines = violations_in(source, module="raters.views")
    assert [line.split(" (")[0] for line in lines] == [
        "raters.views:1 imports analysis.tables",
        "raters.views:4 imports studies.models",
        "raters.views:7 imports studies.panel",
    ]


def test_relative_imports_are_resolved_from_the_module_and_its_package():
    found = imports_in("from ..factors import REFERENCE_LEVEL\nfrom . import work\n", module="datasets.generation.jobs")
    assert [item.name for item in found] == ["datasets.factors.REFERENCE_LEVEL", "datasets.generation.work"]
    in_package = imports_in("from .jobs import start_job\n", module="datasets.generation", is_package=True)
    assert [item.name for item in in_package] == ["datasets.generation.jobs.start_job"]
    # An app's own relative imports stay in the app: never a violation.
    assert violations_in("from ..studies import x\n", module="datasets.generation.jobs") == []


def test_engine_and_jobs_may_import_config_and_each_other_only():
    source = "from config.throttling import Budget\nfrom datasets.models import Answer\nimport jobs.models\n"
    assert violations_in(source, module="engine.calls") == [
        "engine.calls:2 imports datasets.models.Answer (engine must not import datasets)"
    ]


def test_the_walk_reads_the_real_tree():
    """The real modules are parsed: imports known to be there are found (an allowed one, here)."""
    path = REPO / "studies" / "panel.py"
    names = {found.name for found in imports_in(path.read_text(), module="studies.panel")}
    assert "raters.services.CONSUMER" in names and "studies.models.Study" in names


def test_the_reference_level_is_defined_once():
    """`REFERENCE_LEVEL` is assigned in datasets/factors.py only; every other module imports it from there."""
    defined = []
    for app in our_apps():
        for path in app_modules(app):
            for node in ast.walk(ast.parse(path.read_text())):
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                if isinstance(node, ast.Assign | ast.AnnAssign) and any(
                    isinstance(target, ast.Name) and target.id == "REFERENCE_LEVEL" for target in targets
                ):
                    defined.append(str(path.relative_to(REPO)))
    assert defined == ["datasets/factors.py"]
