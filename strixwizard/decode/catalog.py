"""`--model config.json | file.gguf | NAME`: a model's shape from a file or the catalog of
popular models shipped as data (strixwizard/data/models.json, each with its public source)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from strixwizard.decode.quants import Quant
from strixwizard.decode.shapes import ModelShape, config_layout, shape_from_config
from strixwizard.errors import UsageError
from strixwizard.readback import MAX_JSON_BYTES, loads

CATALOG = Path(__file__).resolve().parent.parent / "data" / "models.json"
DEFAULT_MODEL = "Llama-3.1-70B"


def catalog() -> list[dict[str, Any]]:
    data = json.loads(CATALOG.read_text(encoding="utf-8"))
    models = data["models"]
    assert isinstance(models, list)
    return models


def names() -> list[str]:
    return [str(entry["name"]) for entry in catalog()]


SHAPE_FLAGS = "or give the shape: --layers, --hidden, --weight-gib (and --active-fraction for MoE)"


def entry_of(name: str) -> dict[str, Any]:
    wanted = name.lower()
    for entry in catalog():
        if str(entry["name"]).lower() == wanted:
            return entry
    raise UsageError(f"--model {name}: no such file, and not a model of the catalog "
                     f"({', '.join(names())}); pass a config.json or a .gguf file, {SHAPE_FLAGS}")


def quants_of(entry: dict[str, Any]) -> list[Quant]:
    return [Quant.from_json(item) for item in entry.get("quants", [])]


def from_catalog(name: str, quant: str | None = None) -> ModelShape:
    """A catalog model at its checkpoint's precision, or as the llama.cpp quantization
    `quant` (its tensor table built the way llama-quantize types each tensor)."""
    entry = entry_of(name)
    model = str(entry["name"])
    if quant is None:
        return shape_from_config(entry["config"], model, f"config.json of {entry['source']}")
    offered = {q.name.lower(): q for q in quants_of(entry)}
    chosen = offered.get(quant.lower())
    if chosen is None:
        raise UsageError(f"--quant {quant}: not a quantization the catalog has for {model} "
                         f"({', '.join(q.name for q in quants_of(entry)) or 'none'}); for another "
                         "file pass it with --model file.gguf")
    from strixwizard.decode.gguf_shape import shape_from_tensors
    from strixwizard.decode.quants import SOURCE, metadata, tensor_table

    layout = config_layout(entry["config"])
    label = f"{model} {chosen.name}"
    published = (f"; the published file is {chosen.file_gib:g} GiB ({chosen.source})"
                 if chosen.file_gib is not None else "")
    return shape_from_tensors(metadata(str(entry["gguf_arch"]), label, layout),
                              tensor_table(layout, chosen.name), Path(model), label,
                              f"config.json of {entry['source']}, as llama.cpp's {chosen.name} "
                              f"tensor types ({SOURCE}){published}")


def from_config_file(path: Path) -> ModelShape:
    try:
        with path.open("rb") as handle:  # at most one byte past the bound: never a huge file whole
            config = loads(handle.read(MAX_JSON_BYTES + 1), f"--model {path}")
    except OSError as error:
        raise UsageError(f"--model {path}: cannot read it ({error.strerror})") from error
    if not isinstance(config, dict):
        raise UsageError(f"--model {path}: a config.json holds one JSON object")
    # A hand-written config.json names no model: the file as given names it (not its folder's
    # name, which says nothing of the model in a folder such as /tmp or models/).
    name = config.get("_name_or_path") or str(path)
    try:
        return shape_from_config(config, str(name), f"config.json {path}")
    except UsageError as error:
        raise UsageError(f"--model {path}: {error}") from error


def resolve(model: str, quant: str | None = None) -> ModelShape:
    """The shape a `--model` value names (UsageError: missing file, bad JSON, unknown name);
    `quant`: a catalog model's llama.cpp quantization (a file already has its own)."""
    path = Path(model)
    is_file = path.suffix.lower() in (".gguf", ".json") or path.is_file()
    if quant is not None and is_file:
        raise UsageError(f"--quant {quant}: only for a catalog model; {model} is a file "
                         "(a GGUF file carries its own tensor types)")
    if path.suffix.lower() == ".gguf":
        from strixwizard.decode.gguf_shape import shape_from_gguf

        return shape_from_gguf(path)
    if is_file:
        if not path.is_file():
            raise UsageError(f"--model {model}: no such file")
        return from_config_file(path)
    return from_catalog(model, quant)
