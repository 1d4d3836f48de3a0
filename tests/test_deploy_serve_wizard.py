"""The wizard's Deploy step lets the user pick the stack, the model, the transport and the
nodes; each pick plans again through the same deploy service as the CLI and the screen shows
that plan (Pilot on the demo)."""

from __future__ import annotations

from textual.widgets import Checkbox, Input, Select, SelectionList, Static

from strixwizard.services.deploy import DeployChoice
from strixwizard.tui.app import WizardApp
from strixwizard.tui.screens.deploy import DeployState
from strixwizard.tui.steps import key_of
from tests.support.wizard import SIZE, make_app, node_boxes, notice_text, replanned, sync


def text_of(app: WizardApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


@sync
async def test_pickers_start_as_the_cli_defaults_and_list_the_site_nodes() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key_of("deploy"))
        await replanned(app, pilot)
        assert app.screen.query_one("#deploy-stack", Select).value == "ray"
        assert app.screen.query_one("#deploy-transport", Select).value == "rdma"
        nodes = app.screen.query_one("#deploy-node-list", SelectionList)
        assert nodes.selected == ["node-a", "node-b"]
        assert app.screen.query_one("#deploy-serve", Checkbox).display
        assert not app.screen.query_one("#deploy-persist", Checkbox).display
        assert "RCCL · Ray · vLLM: rdma profile (roce-v2)" in notice_text(app, "#deploy-status")


@sync
async def test_the_llama_stack_shows_what_starts_where() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press(key_of("deploy"))
        await replanned(app, pilot)
        app.screen.query_one("#deploy-stack", Select).value = "llama-rpc"
        await replanned(app, pilot)
        assert app.session.of(DeployState).choice.stack == "llama-rpc"
        assert "llama.cpp RPC: rdma profile" in notice_text(app, "#deploy-status")
        boxes = node_boxes(app)
        assert ("env GGML_RDMA_DEV=rocep194s0 GGML_RDMA_GID=1 ggml-rpc-server -H 192.168.100.2 "
                "-p 50052 -c") in boxes
        assert "not started: give the GGUF path on the head as the model" in boxes
        assert not app.screen.query_one("#deploy-env").display  # no env file on this stack
        assert app.screen.query_one("#deploy-persist", Checkbox).display
        app.screen.query_one("#deploy-model", Input).value = "/models/q.gguf"
        app.screen.query_one("#deploy-persist", Checkbox).value = True
        await replanned(app, pilot)
        boxes = node_boxes(app)
        assert "systemd units, started now and at boot" in boxes
        assert "write systemd unit strixwizard-llama-server.service" in boxes


@sync
async def test_tcp_and_serve_reach_the_plan() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press(key_of("deploy"))
        await replanned(app, pilot)
        app.screen.query_one("#deploy-transport", Select).value = "tcp"
        app.screen.query_one("#deploy-model", Input).value = "amd/Llama-3.3-70B-Instruct-FP8-KV"
        app.screen.query_one("#deploy-serve", Checkbox).value = True
        await replanned(app, pilot)
        assert app.session.of(DeployState).choice == DeployChoice(
            transport="tcp", model="amd/Llama-3.3-70B-Instruct-FP8-KV", options=(("serve", True),))
        assert "tcp profile" in notice_text(app, "#deploy-status")
        vllm = app.screen.query_one("#deploy-vllm", Static)
        assert "started on the head by a" in str(vllm.border_title)
        assert "--enforce-eager" in text_of(app, "#deploy-vllm")
        assert "start vllm serve on 192.168.100.1:8000" in node_boxes(app)


@sync
async def test_one_node_is_refused_with_the_reason_and_a_next_step() -> None:
    app = make_app(demo=True)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press(key_of("deploy"))
        await replanned(app, pilot)
        app.screen.query_one("#deploy-node-list", SelectionList).deselect("node-b")
        await replanned(app, pilot)
        assert app.session.of(DeployState).choice.nodes == ("node-a",)
        text = notice_text(app, "#deploy-status")
        assert "a tensor-parallel deploy needs at least two reachable nodes" in text
        assert "Next:" in text and "fewer nodes" in text
        app.screen.query_one("#deploy-node-list", SelectionList).select("node-b")
        await replanned(app, pilot)
        assert app.session.of(DeployState).choice.nodes == ()
        assert "Deploy plan" in str(app.screen.query_one("#deploy-status").border_title)
