"""Read the MT-Bench-101 judge texts out of OpenCompass's Python source without running it.

The official texts live as string constants in `opencompass/datasets/subjective/mtbench101.py`.
The file is parsed with `ast` and every value is read with `ast.literal_eval`: nothing in
it is imported or executed. The output is byte-identical to the pinned
`mt_bench_101/judge_prompts.json`, so its checksum verifies the extraction too.
"""

from __future__ import annotations

import ast
import json

from turnbench.errors import UserError

SOURCE_NOTE = {
    "repo": "open-compass/opencompass",
    "commit": "a5acc4bba3b658f151617a3b393602110fb7a740",
    "path": "opencompass/datasets/subjective/mtbench101.py",
    "license": "Apache-2.0",
    "note": "String constants extracted verbatim with Python's ast.literal_eval; nothing "
    "edited (typos kept).",
}


def _module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                found[target.id] = node.value
    return found


def _template_literals(tree: ast.Module, function: str) -> list[str]:
    """String literals on which `.format(...)` is called inside `function`, in source order."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            literals = []
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "format"
                    and isinstance(call.func.value, ast.Constant)
                    and isinstance(call.func.value.value, str)
                ):
                    literals.append((call.func.value.lineno, call.func.value.value))
            return [text for _, text in sorted(literals)]
    raise UserError(f"MT-Bench-101 source: function {function!r} not found")


def extract_mtbench101_judge_texts(source: str) -> dict:
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise UserError(f"MT-Bench-101 source does not parse: {error}") from None
    constants = _module_constants(tree)

    def literal(name: str):
        if name not in constants:
            raise UserError(f"MT-Bench-101 source: constant {name!r} not found")
        return ast.literal_eval(constants[name])

    table = constants.get("unique_prompt")
    if not isinstance(table, ast.Dict):
        raise UserError("MT-Bench-101 source: the task table 'unique_prompt' is missing")
    rubrics: dict[str, str] = {}
    for key_node, value_node in zip(table.keys, table.values, strict=True):
        if key_node is None or not isinstance(value_node, ast.Name):
            raise UserError("MT-Bench-101 source: unexpected entry in 'unique_prompt'")
        rubrics[ast.literal_eval(key_node)] = literal(value_node.id)

    templates = _template_literals(tree, "eval_prompt_construct")
    with_ref = [t for t in templates if "{ref_answer}" in t]
    without_ref = [t for t in templates if "{ref_answer}" not in t]
    if len(with_ref) != 1 or len(without_ref) != 1:
        raise UserError("MT-Bench-101 source: expected exactly two judge user templates")
    return {
        "source": SOURCE_NOTE,
        "judge_preamble": literal("judge"),
        "score_format": literal("score_format"),
        "task_rubrics": rubrics,
        "skip_first_turn_tasks": literal("skip_first_tasks"),
        "reference_tasks": literal("need_ref_tasks"),
        "user_prompt_template": without_ref[0],
        "user_prompt_template_with_reference": with_ref[0],
    }


def render_judge_texts_json(texts: dict) -> bytes:
    """The exact serialisation of the pinned file (one-space indent, UTF-8, no final newline)."""
    return json.dumps(texts, indent=1, ensure_ascii=False).encode("utf-8")


def judge_prompts_json(raw: bytes) -> bytes:
    """The extractor `sources.json` names: the downloaded source in, the pinned file out."""
    return render_judge_texts_json(extract_mtbench101_judge_texts(raw.decode("utf-8")))
