"""`--model config.json | file.gguf | NAME`: a model's shape from a file or the catalog of
popular models shipped as data (strixwizard/data/models.json, each with its public source)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from strixwizard.decode.shapes import ModelShape, shape_from_config
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


def from_catalog(name: str) -> ModelShape:
    wanted = name.lower()
    for entry in catalog():
        if str(entry["name"]).lower() == wanted:
            return shape_from_config(entry["config"], str(entry["name"]),
                                     f"config.json of {entry['source']}")
    raise UsageError(f"--model {name}: no such file, and not a model of the catalog "
                     f"({', '.join(names())}); pass a config.json or a .gguf file")


def from_config_file(path: Path) -> ModelShape:
    try:
        with path.open("rb") as handle:  # at most one byte past the bound: never a huge file whole
            config = loads(handle.read(MAX_JSON_BYTES + 1), f"--model {path}")
    except OSError as error:
        raise UsageError(f"--model {path}: cannot read it ({error.strerror})") from error
    if not isinstance(config, dict):
        raise UsageError(f"--model {path}: a config.json holds one JSON object")
    name = config.get("_name_or_path") or (path.parent.name if path.name == "config.json" else path.stem)
    try:
        return shape_from_config(config, str(name), f"config.json {path}")
    except UsageError as error:
        raise UsageError(f"--model {path}: {error}") from error


def resolve(model: str) -> ModelShape:
    """The shape a `--model` value names (UsageError: missing file, bad JSON, unknown name)."""
    path = Path(model)
    if path.suffix.lower() == ".gguf":
        from strixwizard.decode.gguf_shape import shape_from_gguf

        return shape_from_gguf(path)
    if path.suffix.lower() == ".json" or path.is_file():
        if not path.is_file():
            raise UsageError(f"--model {model}: no such file")
        return from_config_file(path)
    return from_catalog(model)
