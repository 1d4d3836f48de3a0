"""Deploy is a registry of stacks: each stack is a package under strixwizard/deploy/stacks/ that
declares itself (name, label, options, settings, plan, rendering, smoke test, apply question,
hooks, rollback order) and the engine, the services, the CLI and the wizard ask that
declaration. A stack declared here, outside the product, and put in `STACKS` is planned,
confirmed, smoke-tested, rolled back in order, given its flags and offered by the wizard with
no other change.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from strixwizard.deploy import plan as registry
from strixwizard.deploy.base import (
    DeployPlan,
    DeploySettings,
    Progress,
    Stack,
    file_step,
    group_of,
    mkdir_step,
)
from strixwizard.deploy.declare import Field, Option
from strixwizard.deploy.env import ClusterEnv
from strixwizard.deploy.smoke import PASS, SmokeCheck, SmokeReport
from strixwizard.facts import NodeFacts
from strixwizard.fixing.model import Plan, SitePlan
from strixwizard.fixing.runner import Runner
from strixwizard.services import deploy as services
from strixwizard.services.discover import Diagnosis, discover
from strixwizard.services.nodes import RunRequest

# -- a stack of its own: one file per node holding the model's name ------------------------


def plan_hello(env: ClusterEnv, facts: dict[str, NodeFacts], settings: DeploySettings
               ) -> DeployPlan:
    group = group_of(env)
    plans = [Plan("deploy.hello", node, settings.path("hello.txt"), (
        mkdir_step(settings.target_dir),
        file_step(settings.path("hello.txt"), "write the greeting", f"{settings.model}\n")),
        group=group) for node in [n.node for n in env.nodes]]
    plan = DeployPlan(env, settings, SitePlan(env.site, plans=plans))
    return plan


def smoke_hello(plan: DeployPlan, runners: dict[str, Runner], say: Progress | None = None
                ) -> SmokeReport:
    return SmokeReport([SmokeCheck("hello.files", PASS, f"{len(runners)} node(s)", "files")])


def hello_settings(common: DeploySettings, values: Mapping[str, Any]) -> DeploySettings:
    greeting = f"{values['greeting']} " if values["greeting"] else ""
    return replace(common, stack="hello", model=greeting + (values.get("model") or "nobody"))


HELLO = Stack("hello", "Hello files", plan_hello, smoke_hello, hello_settings,
              lambda plan: "A greeting file is written on every node.",
              options=(Option("--greeting", "greeting", metavar="WORD",
                              help="the word before the model's name",
                              wizard=Field("greeting")),),
              json=lambda plan: {"greeted": plan.settings.model},
              stops_first=frozenset({"/etc/strixwizard/hello.txt"}))


@pytest.fixture
def with_hello(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.STACKS, "hello", HELLO)


@pytest.fixture(scope="module")
def demo() -> Diagnosis:
    return discover(RunRequest(demo=True))


def test_every_stack_package_declares_itself_under_its_own_name() -> None:
    import pkgutil

    from strixwizard.deploy import stacks

    assert list(registry.STACKS)[:2] == ["ray", "llama-rpc"]  # the first is the default
    packages = [info.name for info in pkgutil.iter_modules(stacks.__path__) if info.ispkg]
    assert len(registry.discovered()) == len(packages)
    for name, stack in registry.STACKS.items():
        assert stack.name == name and stack.label and stack.about and stack.model_hint
        assert len({o.dest for o in stack.options}) == len(stack.options)
    assert registry.stack_of(DeploySettings().stack) is next(iter(registry.STACKS.values()))


def test_every_stack_command_is_one_of_its_options_and_a_function_of_the_cli() -> None:
    import importlib

    assert registry.STACKS["llama-rpc"].commands == {"build": "strixwizard.cli.llama_build:cmd_build"}
    for stack in registry.STACKS.values():
        for dest, target in stack.commands.items():
            assert stack.option(dest) is not None, (stack.name, dest)
            module, _, function = target.partition(":")
            assert module.startswith("strixwizard.cli."), target
            assert callable(getattr(importlib.import_module(module), function)), target


def test_the_stacks_settings_travel_as_their_own_objects() -> None:
    from strixwizard.deploy.stacks.llama_rpc.llama import LlamaSettings
    from strixwizard.deploy.stacks.ray.serve import ServeSettings

    llama = registry.settings_from("llama-rpc", {"model": "/m.gguf", "persist": True})
    assert llama.stack == "llama-rpc" and llama.own(ServeSettings) is None
    assert llama.own(LlamaSettings) == LlamaSettings(model="/m.gguf", persist=True)
    ray = registry.settings_from("ray", {"model": "org/model", "serve": True})
    assert ray.model == "org/model" and ray.own(ServeSettings) == ServeSettings()
    assert ray.own(LlamaSettings) is None


def test_the_cli_and_the_wizard_build_the_same_settings() -> None:
    """One builder per stack: the CLI's flags and the wizard's choice give equal settings."""
    from strixwizard.cli.deploy import _settings
    from strixwizard.cli.main import _parser

    for argv, choice in (
            (["--model", "org/m", "--serve"], services.DeployChoice(model="org/m",
                                                                    options=(("serve", True),))),
            (["--stack", "llama-rpc", "--model", "/m.gguf", "--persist"],
             services.DeployChoice(stack="llama-rpc", model="/m.gguf", options=(("persist", True),)))):
        args = _parser("deploy").parse_args(["deploy", "--demo", *argv])
        assert _settings(args) == choice.settings()


@pytest.mark.usefixtures("with_hello")
def test_a_new_stack_is_planned_confirmed_and_offered_with_no_other_change(demo: Diagnosis) -> None:
    settings = services.DeployChoice(stack="hello", model="world", transport="tcp").settings()
    preview = services.plan(demo.found, demo.report, settings, "tcp")
    assert preview.plan is not None, preview.refused
    files = {p.node: [s.after for s in p.steps if s.target.endswith("hello.txt")]
             for p in preview.plan.site_plan.plans}
    assert files == {"node-a": ["world\n"], "node-b": ["world\n"]}
    question = services.apply_question(preview.plan)
    assert question.detail.endswith("A greeting file is written on every node.")
    assert services.stack_labels()["hello"] == "Hello files"
    assert [o.dest for o in services.wizard_options()["hello"]] == ["greeting"]
    assert preview.plan.to_json()["greeted"] == "world"


@pytest.mark.usefixtures("with_hello")
def test_the_engine_runs_the_stacks_own_smoke_test(demo: Diagnosis) -> None:
    from strixwizard.deploy.engine import smoke_cluster

    preview = services.plan(demo.found, demo.report, registry.settings_from("hello", {}), "tcp")
    assert preview.plan is not None
    report = smoke_cluster(preview.plan, {})
    assert [c.id for c in report.checks] == ["hello.files"]


@pytest.mark.usefixtures("with_hello")
def test_the_cli_plans_a_new_stack_from_the_common_flags(demo: Diagnosis, capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    from strixwizard.cli.main import main

    assert main(["deploy", "--demo", "--stack", "hello", "--model", "world", "--transport", "tcp",
                 "--greeting", "hi", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    targets = {s["target"] for p in doc["plan"]["plans"] for s in p["steps"]}
    assert "/etc/strixwizard/hello.txt" in targets
    assert doc["plan"]["greeted"] == "hi world" and "vllm_argv" not in doc["plan"]


def test_an_unknown_stack_is_refused_with_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    from strixwizard.cli.main import main

    assert main(["deploy", "--demo", "--stack", "nope"]) == 2
    known = ", ".join(registry.STACKS)
    assert f"no deploy stack 'nope' (known: {known})" in capsys.readouterr().err


def test_a_switch_the_stack_does_not_read_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from strixwizard.cli.main import main

    assert main(["deploy", "--demo", "--persist"]) == 2
    assert "--persist is for --stack llama-rpc, not ray" in capsys.readouterr().err


def test_a_rollback_undoes_in_the_order_the_stacks_declare(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """A server before its workers, a head after them: ranks come from `stops_first`/`stops_last`."""
    from strixwizard.deploy import engine

    seen: list[str] = []

    def record(journals: list, runner_for: object, store: object, say: object = None,  # type: ignore[type-arg]
               holder: object = None, break_lock: bool = False) -> object:
        seen.extend(j.node for j in journals)
        return SimpleNamespace(nodes=[])

    def journal(node: str, target: str) -> SimpleNamespace:
        return SimpleNamespace(node=node, steps=[SimpleNamespace(step=SimpleNamespace(target=target))])

    monkeypatch.setattr("strixwizard.fixing.engine.rollback_run", record)
    journals = [journal("head", "ray (head)"), journal("worker", "ray (worker)"),
                journal("server", "llama-server")]
    engine.rollback_deploy(journals, None)  # type: ignore[arg-type]
    assert seen == ["server", "worker", "head"]


@pytest.mark.usefixtures("with_hello")
def test_the_wizard_offers_a_new_stack_and_shows_its_plan() -> None:
    from textual.widgets import Checkbox, Input, Select

    from strixwizard.tui.screens.deploy import DeployState
    from strixwizard.tui.steps import key_of
    from tests.support.wizard import make_app, node_boxes, notice_text, replanned, sync

    @sync
    async def walk() -> None:
        app = make_app(demo=True)
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press(key_of("deploy"))
            await replanned(app, pilot)
            app.screen.query_one("#deploy-stack", Select).value = "hello"
            app.screen.query_one("#deploy-model", Input).value = "world"
            await replanned(app, pilot)
            assert "Hello files: rdma profile" in notice_text(app, "#deploy-status")
            boxes = node_boxes(app)
            assert "deploy.hello  write the greeting" in boxes and "node-a (head, " in boxes
            assert "Container" not in boxes and "Ray" not in boxes
            assert not app.screen.query_one("#deploy-serve", Checkbox).display
            assert not app.screen.query_one("#deploy-persist", Checkbox).display
            assert app.screen.query_one("#deploy-greeting", Input).display
            app.screen.query_one("#deploy-greeting", Input).value = "hi"
            await replanned(app, pilot)
            assert "write the greeting" in node_boxes(app)
            assert app.session.of(DeployState).choice.value("greeting") == "hi"

    walk()


@pytest.mark.usefixtures("with_hello")
def test_the_text_plan_of_a_new_stack_shows_its_changes_and_no_ray_environment(
        capsys: pytest.CaptureFixture[str]) -> None:
    from strixwizard.cli.main import main

    assert main(["deploy", "--demo", "--stack", "hello", "--model", "world"]) == 0
    out = capsys.readouterr().out
    assert "write the greeting" in out and "/etc/strixwizard/hello.txt" in out
    assert "NCCL_IB_HCA" not in out and "Environment" not in out


def test_deploy_help_shows_a_stacks_options_only_when_that_stack_is_named() -> None:
    from tests.support.cli import invoke

    def flags(text: str) -> set[str]:
        return {line.split()[0] for line in text.splitlines() if line.startswith("  -")}

    overview = invoke("deploy", "--help").stdout
    assert "--stack NAME --help" in overview
    assert {"--stack", "--model", "--target-dir"} <= flags(overview)
    assert not {"--gguf", "--serve", "--ray-temp-dir"} & flags(overview)
    llama = invoke("deploy", "--stack", "llama-rpc", "--help").stdout
    assert "llama.cpp RPC (--stack llama-rpc):" in llama and {"--gguf", "--persist"} <= flags(llama)
    assert not {"--serve", "--ray-temp-dir"} & flags(llama)
    ray = invoke("deploy", "--stack", "ray", "--help").stdout
    assert "vLLM (--serve, with --stack ray):" in ray and {"--serve", "--ray-temp-dir"} <= flags(ray)
    assert not {"--gguf", "--persist"} & flags(ray)


def test_the_site_files_stack_is_the_deploys_unless_stack_is_given(tmp_path: Path) -> None:
    from tests.support.cli import invoke
    from tests.support.demo_site import demo_site_with

    site = demo_site_with(tmp_path, "stack: llama-rpc\n")
    assert invoke("deploy", "--site", str(site), "--json").json()["plan"]["stack"] == "llama-rpc"
    given = invoke("deploy", "--site", str(site), "--stack", "ds4", "--json").json()
    assert given["plan"]["stack"] == "ds4"


def test_the_wizard_starts_on_the_site_files_stack(tmp_path: Path) -> None:
    from textual.widgets import Select

    from strixwizard.services.discover import SiteSource
    from strixwizard.tui.steps import key_of
    from tests.support.demo_site import demo_site_with
    from tests.support.wizard import make_app, replanned, sync

    site = demo_site_with(tmp_path, "stack: llama-rpc\n")

    @sync
    async def walk() -> None:
        app = make_app(source=SiteSource(site_file=site), resume=False)
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press(key_of("deploy"))
            await replanned(app, pilot)
            assert app.screen.query_one("#deploy-stack", Select).value == "llama-rpc"

    walk()
