"""The published JSON Schema of results.json (`docs/results.schema.json`).

Generated from the typed results (`turnbench.results.build`) plus each built-in benchmark's score
tables and settings (`results_model`, `header_model`): a model's results must carry its
benchmark's when the `benchmark` key names a built-in one, and may carry any tables for a
benchmark written elsewhere.

    python -m turnbench.interop.schema                 # print it
    python -m turnbench.interop.schema --write FILE    # write it (the repository keeps it in docs/)
    python -m turnbench.interop.schema --audit --write docs/audit.schema.json  # audit.json's
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from turnbench.benchmarks import builtin_benchmarks
from turnbench.results.build import results_schema

MODEL_DEFS = ("ModelResults", "SingleRunResults")


def full_schema() -> dict[str, Any]:
    schema = results_schema()
    definitions = schema.setdefault("$defs", {})
    conditions = []
    for name, cls in builtin_benchmarks().items():
        models = [model for model in (cls.header_model, cls.results_model) if model is not None]
        for model in models:
            keys = model.model_json_schema(ref_template="#/$defs/{model}")
            definitions.update(keys.pop("$defs", {}))
            definitions[model.__name__] = keys
        if models:
            refs = [{"$ref": f"#/$defs/{model.__name__}"} for model in models]
            conditions.append(
                {
                    "if": {"properties": {"benchmark": {"const": name}}, "required": ["benchmark"]},
                    "then": refs[0] if len(refs) == 1 else {"allOf": refs},
                }
            )
    for name in MODEL_DEFS:
        definitions[name]["allOf"] = conditions
    return schema


def render(audit: bool = False) -> str:
    if audit:
        from turnbench.audit.models import audit_schema

        return json.dumps(audit_schema(), indent=2, sort_keys=True) + "\n"
    return json.dumps(full_schema(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="Write the schema to this file.")
    parser.add_argument(
        "--audit", action="store_true", help="The schema of audit.json (audit-judge) instead."
    )
    args = parser.parse_args()
    text = render(args.audit)
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
