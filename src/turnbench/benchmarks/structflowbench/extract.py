"""Read StructFlowBench's judge prompt out of its `evaluation/evaluate.py` without running it.

The template is the string assigned to `self.prompt_template` in that file. The file is
parsed with `ast` and the value read with `ast.literal_eval`: nothing in it is imported or
executed. The output is byte-identical to the pinned `structflowbench/judge_prompt.json`, so
its checksum verifies the extraction too.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from turnbench.errors import UserError

SOURCE_NOTE = {
    "repo": "MLGroupJLU/StructFlowBench",
    "commit": "5a65141d21285c2519d82380eeb828c2d70a593d",
    "path": "evaluation/evaluate.py",
    "license": "MIT",
    "note": "The judge prompt template, read verbatim with Python's ast.literal_eval (a "
    "str.format template: doubled braces are literal braces).",
}
ATTRIBUTE = "prompt_template"


def extract_judge_prompt(source: str) -> str:
    """The string assigned to `self.prompt_template` (exactly one such assignment)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise UserError(f"StructFlowBench evaluate.py does not parse: {error}") from None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if (
                isinstance(target, ast.Attribute)
                and target.attr == ATTRIBUTE
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                found.append(node.value)
    if len(found) != 1:
        raise UserError(
            f"StructFlowBench evaluate.py: expected one self.{ATTRIBUTE} assignment, found "
            f"{len(found)}"
        )
    value: Any = ast.literal_eval(found[0])
    if not isinstance(value, str):
        raise UserError(f"StructFlowBench evaluate.py: self.{ATTRIBUTE} is not a string")
    return value


def render_judge_prompt_json(template: str) -> bytes:
    """The exact serialisation of the pinned file (one-space indent, UTF-8, no final
    newline)."""
    texts = {"source": SOURCE_NOTE, "judge_prompt_template": template}
    return json.dumps(texts, indent=1, ensure_ascii=False).encode("utf-8")


def judge_prompt_json(raw: bytes) -> bytes:
    """The extractor named in sources.json: evaluate.py's bytes -> judge_prompt.json's."""
    return render_judge_prompt_json(extract_judge_prompt(raw.decode("utf-8")))
